import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { declareEmergency } from '../../src/domain/emergencies/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';
import { assertValidCap, atomView, capView, getXml } from './support.js';

/** GET /orgs/{org_id}/cap/feed: an Atom 1.0 feed of the org's open and recently resolved emergencies, each with its CAP alert. */
describe('CAP Atom feed', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  let api: ReturnType<typeof client>;

  const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
  const declare = async (api: ReturnType<typeof client>, orgId: string, body: Record<string, unknown>) => {
    const res = await api.post(`/orgs/${orgId}/emergencies`, body);
    assert.equal(res.status, 201);
    return res.body.emergencyId as string;
  };

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    api = client(server.base, key);
  });
  after(() => server.close());

  it('holds the open emergencies and those resolved in the last 24 h, newest first, each with its valid CAP alert', async () => {
    const declared = await declare(api, org.orgId, { categoryName: 'Fire', occurredAt: hoursAgo(3), description: 'Kitchen fire' });
    const categorized = await declare(api, org.orgId, { occurredAt: hoursAgo(1), location: { latitude: 10, longitude: 20, floorId: 'F1' } });
    assert.equal((await api.patch(`/orgs/${org.orgId}/emergencies/${categorized}`, { categoryName: 'Medical' })).status, 200);
    const resolvedToday = await declare(api, org.orgId, { categoryName: 'Medical', occurredAt: hoursAgo(2) });
    assert.equal((await api.post(`/orgs/${org.orgId}/emergencies/${resolvedToday}/resolutions`, {})).status, 201);
    const resolvedEarlier = await declare(api, org.orgId, { categoryName: 'Fire', occurredAt: hoursAgo(0.5) });
    assert.equal((await api.post(`/orgs/${org.orgId}/emergencies/${resolvedEarlier}/resolutions`, {})).status, 201);
    // Resolved 25 hours ago: out of the feed.
    await server.ctx.db.db
      .updateTable('emergency_resolutions')
      .set({ created_at: hoursAgo(25) })
      .where('emergency_id', '=', resolvedEarlier)
      .execute();
    const other = await createOrgTree(server.ctx);
    await declare(client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: other.orgId })).key), other.orgId, {});

    const res = await getXml(`${server.base}/orgs/${org.orgId}/cap/feed`, key);
    assert.equal(res.status, 200);
    assert.equal(res.type, 'application/atom+xml; charset=utf-8');
    const feed = atomView(res.text);
    assert.equal(feed.id, `urn:uuid:${org.orgId}`);
    assert.deepEqual(
      feed.entries.map((e) => e.id),
      [categorized, resolvedToday, declared].map((id) => `urn:uuid:${id}`),
    );
    assert.deepEqual(
      feed.entries.map((e) => capView(e.alertXml).msgType),
      ['Update', 'Cancel', 'Alert'],
    );
    assert.equal(
      feed.updated,
      feed.entries
        .map((e) => e.updated)
        .sort()
        .at(-1),
    );
    for (const entry of feed.entries) {
      assertValidCap(entry.alertXml, `the alert of feed entry ${entry.id}`);
      assert.equal(entry.capLink, `/api/public/v1/orgs/${org.orgId}/emergencies/${entry.id.slice('urn:uuid:'.length)}/cap`);
      const linked = await getXml(new URL(entry.capLink, `${server.base}/orgs/${org.orgId}/cap/feed`).href, key);
      assert.equal(linked.status, 200, entry.capLink);
      assert.deepEqual(capView(linked.text), capView(entry.alertXml));
      assert.equal(new Date(entry.updated).getTime(), new Date(capView(entry.alertXml).sent).getTime());
    }
    assert.equal(capView(feed.entries[0]!.alertXml).circle, '10,20 0');
  });

  it('is empty but valid Atom for an org without emergencies, and follows the key rules', async () => {
    const quiet = await createOrgTree(server.ctx);
    const quietKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: quiet.orgId, permissions: ['read'] })).key;
    const res = await getXml(`${server.base}/orgs/${quiet.orgId}/cap/feed`, quietKey);
    assert.equal(res.status, 200);
    assert.deepEqual(atomView(res.text).entries, []);
    const foreign = await getXml(`${server.base}/orgs/${org.orgId}/cap/feed`, quietKey);
    assert.equal(foreign.status, 403);
    assert.equal(JSON.parse(foreign.text).detail.error, 'org_not_covered');
    assert.equal((await fetch(`${server.base}/orgs/${org.orgId}/cap/feed`)).status, 401);
  });

  it('is bounded: at most 500 entries, the newest', async () => {
    const busy = await createOrgTree(server.ctx);
    const busyKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: busy.orgId, permissions: ['read'] })).key;
    const ids: string[] = [];
    for (let i = 0; i < 501; i++) {
      const occurredAt = new Date(Date.parse('2026-01-01T00:00:00Z') + i * 60_000).toISOString();
      ids.push((await declareEmergency(server.ctx, operatorCaller(), busy.orgId, { occurredAt })).emergencyId);
    }
    const feed = atomView((await getXml(`${server.base}/orgs/${busy.orgId}/cap/feed`, busyKey)).text);
    assert.equal(feed.entries.length, 500);
    assert.equal(feed.entries[0]!.id, `urn:uuid:${ids.at(-1)}`);
    assert.ok(!feed.entries.some((e) => e.id === `urn:uuid:${ids[0]}`));
  });
});
