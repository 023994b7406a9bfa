import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pruneExpiredEvents } from '../../src/log/retention.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';
import { assertValidCap, capView, getXml } from './support.js';

const CAP_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}-00:00$/;

/** GET /orgs/{org_id}/emergencies/{emergency_id}/cap: every state of an emergency as a CAP 1.2 alert, valid by the schema. */
describe('CAP export', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  let api: ReturnType<typeof client>;
  let orgName: string;

  const capOf = (id: string, withKey = key, orgId = org.orgId) => getXml(`${server.base}/orgs/${orgId}/emergencies/${id}/cap`, withKey);
  const declare = async (body: Record<string, unknown>) => {
    const res = await api.post(`/orgs/${org.orgId}/emergencies`, body);
    assert.equal(res.status, 201);
    return res.body as { emergencyId: string; createdAt: string };
  };
  /** The document of an emergency, checked by xmllint against the schema, as fields. */
  const validCap = async (id: string, what: string) => {
    const res = await capOf(id);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.type, 'application/cap+xml; charset=utf-8');
    assertValidCap(res.text, what);
    return { xml: res.text, cap: capView(res.text) };
  };

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    api = client(server.base, key);
    orgName = (await server.ctx.db.db.selectFrom('orgs').select('name').where('id', '=', org.orgId).executeTakeFirstOrThrow()).name;
  });
  after(() => server.close());

  it('declared, without location: an Alert naming the org, its category and severity, with no area and no references', async () => {
    const e = await declare({ categoryName: 'Fire', description: 'Smoke in the east stairwell' });
    const { cap } = await validCap(e.emergencyId, 'declared, no location');
    assert.equal(cap.identifier, `${e.emergencyId}.1`);
    assert.equal(cap.sender, `urn:uuid:${org.orgId}`);
    assert.match(cap.sent, CAP_TIME);
    assert.equal(new Date(cap.sent).getTime(), Math.floor(Date.parse(e.createdAt) / 1000) * 1000);
    assert.deepEqual(
      [cap.status, cap.msgType, cap.scope, cap.references, cap.category, cap.event, cap.urgency, cap.severity, cap.certainty],
      ['Actual', 'Alert', 'Private', null, 'Fire', 'Fire', 'Immediate', 'Extreme', 'Observed'],
    );
    assert.equal(cap.senderName, orgName);
    assert.equal(cap.description, 'Smoke in the east stairwell');
    assert.equal(cap.areaDesc, null);
  });

  it('declared, with location: a circle of radius 0 at its coordinates, described by its floor id', async () => {
    const e = await declare({ categoryName: 'Medical', location: { latitude: 47.6205, longitude: -122.3493, floorId: 'B-2' } });
    const { cap } = await validCap(e.emergencyId, 'declared, with location');
    assert.equal(cap.severity, 'Moderate');
    assert.equal(cap.category, 'Health');
    assert.equal(cap.areaDesc, 'B-2');
    assert.equal(cap.circle, '47.6205,-122.3493 0');

    const floorOnly = await declare({ location: { floorId: 'Gym' } });
    const uncategorized = (await validCap(floorOnly.emergencyId, 'floor only, Uncategorized')).cap;
    assert.deepEqual([uncategorized.areaDesc, uncategorized.circle], ['Gym', null]);
    assert.deepEqual([uncategorized.category, uncategorized.event, uncategorized.severity], ['Other', 'Uncategorized', 'Unknown']);

    const tiny = await declare({ location: { latitude: 0.0000001, longitude: -0.5 } });
    assert.equal((await validCap(tiny.emergencyId, 'coordinates without a floor')).cap.circle, '0.0000001,-0.5 0');
  });

  it('re-categorized: an Update referencing the Alert; resolved: a Cancel referencing both, with its note, with and without location', async () => {
    for (const location of [undefined, { latitude: 40.1, longitude: -3.7, floorId: 'Lab 3' }]) {
      const e = await declare({ categoryName: 'Medical', description: 'Fall in the lab', ...(location ? { location } : {}) });
      const alert = (await validCap(e.emergencyId, 'declared')).cap;
      assert.equal((await api.patch(`/orgs/${org.orgId}/emergencies/${e.emergencyId}`, { categoryName: 'Fire' })).status, 200);
      const update = (await validCap(e.emergencyId, 're-categorized')).cap;
      assert.equal(update.msgType, 'Update');
      assert.equal(update.identifier, `${e.emergencyId}.2`);
      assert.deepEqual([update.category, update.event, update.severity], ['Fire', 'Fire', 'Extreme']);
      assert.equal(update.references, `${alert.sender},${alert.identifier},${alert.sent}`);
      assert.equal(update.circle, location ? '40.1,-3.7 0' : null);

      const resolved = await api.post(`/orgs/${org.orgId}/emergencies/${e.emergencyId}/resolutions`, { resolutionNote: 'All clear, false alarm' });
      assert.equal(resolved.status, 201);
      const cancel = (await validCap(e.emergencyId, 'resolved')).cap;
      assert.equal(cancel.msgType, 'Cancel');
      assert.equal(cancel.identifier, `${e.emergencyId}.3`);
      assert.equal(cancel.references, `${alert.sender},${alert.identifier},${alert.sent} ${update.sender},${update.identifier},${update.sent}`);
      assert.equal(cancel.note, 'All clear, false alarm');
      assert.equal(cancel.responseType, 'AllClear');
      assert.equal(cancel.areaDesc, location ? 'Lab 3' : null);
    }
    const direct = await declare({ categoryName: 'Fire' });
    await api.post(`/orgs/${org.orgId}/emergencies/${direct.emergencyId}/resolutions`, {});
    const cancel = (await validCap(direct.emergencyId, 'resolved without re-categorization')).cap;
    assert.deepEqual([cancel.msgType, cancel.identifier, cancel.note], ['Cancel', `${direct.emergencyId}.2`, null]);
    assert.equal(cancel.references, `urn:uuid:${org.orgId},${direct.emergencyId}.1,${cancel.references!.split(',')[2]}`);
  });

  it('text stands for itself: characters XML cannot carry are replaced, markup and entity references are escaped', async () => {
    const description = 'a\u0001b\u001f <script>&amp;</script> &foo; &#0; &#65; ]]> R&D';
    const e = await declare({ description });
    const { cap } = await validCap(e.emergencyId, 'control characters, markup and entity references in the description');
    assert.equal(cap.description, description.replaceAll('\u0001', '\uFFFD').replaceAll('\u001f', '\uFFFD'));
  });

  it('follows the key rules of GET emergency: 404 for what the org does not have, 403 for another org, read keys allowed', async () => {
    const e = await declare({ categoryName: 'Fire' });
    for (const id of ['0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b6d', 'not-an-id', 'x'.repeat(300)]) {
      const res = await capOf(id);
      assert.equal(res.status, 404);
      assert.equal(JSON.parse(res.text).detail.error, 'emergency_not_found');
    }
    const other = await createOrgTree(server.ctx);
    const otherKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: other.orgId })).key;
    const foreign = await capOf(e.emergencyId, otherKey);
    assert.equal(foreign.status, 403);
    assert.equal(JSON.parse(foreign.text).detail.error, 'org_not_covered');
    // Another org's emergency, asked for under that org's own id, is not found there.
    assert.equal((await capOf(e.emergencyId, otherKey, other.orgId)).status, 404);
    const readKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['read'] })).key;
    assert.equal((await capOf(e.emergencyId, readKey)).status, 200);
    assert.equal((await capOf(e.emergencyId, readKey, org.orgId.toUpperCase())).status, 200);
    assert.equal((await fetch(`${server.base}/orgs/${org.orgId}/emergencies/${e.emergencyId}/cap`)).status, 401);
  });

  it('keeps identifiers and references once retention has removed the events', async () => {
    const e = await declare({ categoryName: 'Fire', location: { latitude: 1, longitude: 2 } });
    await api.patch(`/orgs/${org.orgId}/emergencies/${e.emergencyId}`, { categoryName: 'Medical' });
    const before = (await validCap(e.emergencyId, 'before pruning')).xml;
    assert.ok((await pruneExpiredEvents(server.ctx.db, 7, Date.now() + 8 * 86_400_000)) > 0);
    assert.equal((await validCap(e.emergencyId, 'after pruning')).xml, before);
  });
});
