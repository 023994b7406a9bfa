import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { pruneExpiredEvents } from '../../src/log/retention.js';
import { createSubscription } from '../../src/domain/webhooks/service.js';
import { startReceiver, type Receiver, verify, waitFor } from '../delivery/helpers.js';
import { connectDevice } from '../devices/support.js';
import { client } from '../helpers/http.js';
import { connectMcp } from '../helpers/mcp.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** The event feed (GET /orgs/{org_id}/events), the emergency timeline, GET /orgs and the list_events tool. */
describe('event feed', () => {
  let server: TestServer;
  let receiver: Receiver;
  let org: OrgFixture;
  let api: ReturnType<typeof client>;
  let key: string;
  let secret: string;
  const ids: string[] = [];

  before(async () => {
    server = await startTestServer({ WEBHOOK_RETRY_SCHEDULE: '0.2,0.2' }, { dispatcher: { requestTimeoutMs: 1500, leaseMs: 3000, pollIntervalMs: 100 } });
    receiver = await startReceiver();
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    api = client(server.base, key);
    secret = (await createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `${receiver.url}/feed` })).secret;
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  it('gives the offsets a connected device receives and, byte for byte, the bodies webhook subscribers receive', async () => {
    const { token } = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Lobby' });
    const device = await connectDevice(`${server.url.replace(/^http/, 'ws')}/devices/v1/stream`, token);
    for (const description of ['one', 'two', 'three']) {
      const res = await api.post(`/orgs/${org.orgId}/emergencies`, { description });
      assert.equal(res.status, 201);
      ids.push(res.body.emergencyId);
    }
    assert.equal((await api.patch(`/orgs/${org.orgId}/emergencies/${ids[0]}`, { categoryName: 'Fire' })).status, 200);
    assert.equal((await api.post(`/orgs/${org.orgId}/emergencies/${ids[0]}/resolutions`, {})).status, 201);
    await device.until(() => device.events.length === 5, 5_000, 'five events');
    await waitFor('five deliveries', () => receiver.forPath('/feed').length >= 5);
    await device.close();

    const res = await fetch(`${server.base}/orgs/${org.orgId}/events`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    const text = await res.text();
    const page = JSON.parse(text);
    assert.deepEqual(
      page.items.map((i: { offset: number }) => i.offset),
      device.offsets(),
    );
    assert.equal(page.lastOffset, 5);
    assert.equal(page.nextCursor, null);
    for (const [i, item] of page.items.entries()) assert.deepEqual(item.event, device.events[i]!.event);
    for (const delivery of receiver.forPath('/feed')) {
      verify(secret, delivery);
      const offset = device.events.find((e) => e.event.eventId === delivery.json.eventId)!.offset;
      assert.ok(text.includes(`{"offset":${offset},"event":${delivery.body}}`), 'the feed embeds the delivered body unchanged');
    }
    assert.deepEqual(
      page.items.map((i: { event: { eventType: string } }) => i.event.eventType),
      ['emergency.declared', 'emergency.declared', 'emergency.declared', 'emergency.categorized', 'emergency.resolved'],
    );
  });

  it('pages with limit and cursor, resumes after an offset, and filters by type and emergency', async () => {
    const first = await api.get(`/orgs/${org.orgId}/events?limit=2`);
    assert.deepEqual(
      first.body.items.map((i: { offset: number }) => i.offset),
      [1, 2],
    );
    assert.equal(typeof first.body.nextCursor, 'string');
    const second = await api.get(`/orgs/${org.orgId}/events?limit=2&after=0&cursor=${first.body.nextCursor}`);
    assert.deepEqual(
      second.body.items.map((i: { offset: number }) => i.offset),
      [3, 4],
    );
    const third = await api.get(`/orgs/${org.orgId}/events?limit=2&cursor=${second.body.nextCursor}`);
    assert.deepEqual(
      third.body.items.map((i: { offset: number }) => i.offset),
      [5],
    );
    assert.equal(third.body.nextCursor, null);

    const resumed = await api.get(`/orgs/${org.orgId}/events?after=3`);
    assert.deepEqual(
      resumed.body.items.map((i: { offset: number }) => i.offset),
      [4, 5],
    );
    const caughtUp = await api.get(`/orgs/${org.orgId}/events?after=5`);
    assert.deepEqual(caughtUp.body, { items: [], nextCursor: null, lastOffset: 5 });

    const declaredOnly = await api.get(`/orgs/${org.orgId}/events?eventType=emergency.declared`);
    assert.equal(declaredOnly.body.items.length, 3);
    const repeated = await api.get(`/orgs/${org.orgId}/events?eventType=emergency.categorized&eventType=emergency.resolved`);
    const commaList = await api.get(`/orgs/${org.orgId}/events?eventType=emergency.categorized,emergency.resolved`);
    assert.deepEqual(
      repeated.body.items.map((i: { offset: number }) => i.offset),
      [4, 5],
    );
    assert.deepEqual(commaList.body, repeated.body);
    const one = await api.get(`/orgs/${org.orgId}/events?emergencyId=${ids[0]!.toUpperCase()}`);
    assert.deepEqual(
      one.body.items.map((i: { event: { sequence: number } }) => i.event.sequence),
      [1, 2, 3],
    );
    assert.equal((await api.get(`/orgs/${org.orgId}/events?emergencyId=not-an-id`)).body.items.length, 0);
  });

  it('refuses bad parameters with the field named', async () => {
    const cases: [string, string][] = [
      ['eventType=emergency.deleted', 'eventType'],
      ['limit=501', 'limit'],
      ['limit=0', 'limit'],
      ['after=-1', 'after'],
      ['after=1.5', 'after'],
      ['cursor=%21%21', 'cursor'],
    ];
    for (const [query, field] of cases) {
      const res = await api.get(`/orgs/${org.orgId}/events?${query}`);
      assert.equal(res.status, 422, query);
      assert.deepEqual(res.body.detail[0].loc, ['query', field], query);
    }
  });

  it("gives an emergency's timeline in sequence order, 404 for an unknown emergency or one of another org", async () => {
    const timeline = await api.get(`/orgs/${org.orgId}/emergencies/${ids[0]}/events`);
    assert.equal(timeline.status, 200);
    assert.deepEqual(
      timeline.body.items.map((i: { offset: number; event: { sequence: number } }) => [i.offset, i.event.sequence]),
      [
        [1, 1],
        [4, 2],
        [5, 3],
      ],
    );
    const paged = await api.get(`/orgs/${org.orgId}/emergencies/${ids[0]}/events?limit=2`);
    assert.equal(paged.body.items.length, 2);
    const rest = await api.get(`/orgs/${org.orgId}/emergencies/${ids[0]}/events?limit=2&cursor=${paged.body.nextCursor}`);
    assert.deepEqual(
      rest.body.items.map((i: { offset: number }) => i.offset),
      [5],
    );
    assert.equal((await api.get(`/orgs/${org.orgId}/emergencies/00000000-0000-4000-8000-000000000000/events`)).body.detail.error, 'emergency_not_found');

    const other = await createOrgTree(server.ctx);
    const otherApi = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: other.orgId })).key);
    const foreign = await otherApi.post(`/orgs/${other.orgId}/emergencies`, { description: 'elsewhere' });
    const crossed = await api.get(`/orgs/${org.orgId}/emergencies/${foreign.body.emergencyId}/events`);
    assert.equal(crossed.status, 404);
    assert.equal(crossed.body.detail.error, 'emergency_not_found');
    const forbidden = await api.get(`/orgs/${other.orgId}/events`);
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.body.detail.error, 'org_not_covered');
    // The other org's events never appear in this org's feed.
    const mine = await api.get(`/orgs/${org.orgId}/events?limit=500`);
    assert.ok(mine.body.items.every((i: { event: { orgId: string } }) => i.event.orgId === org.orgId));
  });

  it('answers the same page through the list_events tool', async () => {
    const mcp = await connectMcp(server.url, key);
    try {
      const viaTool = await mcp.ok('list_events', { orgId: org.orgId, after: 1, limit: 3, eventType: 'emergency.declared,emergency.resolved' });
      const viaRest = await api.get(`/orgs/${org.orgId}/events?after=1&limit=3&eventType=emergency.declared,emergency.resolved`);
      assert.deepEqual(viaTool, viaRest.body);
      const bad = await mcp.fail('list_events', { orgId: org.orgId, limit: 1000 });
      assert.equal(bad.status, 422);
    } finally {
      await mcp.close();
    }
  });

  it('says 410 events_expired with the oldest offset kept once retention removed the events after `after`', async () => {
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await server.ctx.db.db.updateTable('events').set({ created_at: old }).where('org_id', '=', org.orgId).where('stream_offset', '<=', 2).execute();
    assert.equal(await pruneExpiredEvents(server.ctx.db, 30), 2);
    const expired = await api.get(`/orgs/${org.orgId}/events?after=1`);
    assert.equal(expired.status, 410);
    assert.equal(expired.body.detail.error, 'events_expired');
    assert.equal(expired.body.detail.oldestOffset, 3);
    const fromOldest = await api.get(`/orgs/${org.orgId}/events`);
    assert.equal(fromOldest.status, 200);
    assert.deepEqual(
      fromOldest.body.items.map((i: { offset: number }) => i.offset),
      [3, 4, 5],
    );
    assert.equal((await api.get(`/orgs/${org.orgId}/events?after=2`)).body.items.length, 3);
    // Nothing newer than the retention is removed.
    assert.equal(await pruneExpiredEvents(server.ctx.db, 30), 0);
  });
});

describe('GET /orgs', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
  });
  after(() => server.close());

  it('lists the organizations a key covers, by name, paged, narrowed by allowedOrgIds', async () => {
    const a = await createOrgTree(server.ctx);
    const b = await createOrgTree(server.ctx, { partnerId: a.partnerId });
    const elsewhere = await createOrgTree(server.ctx);
    const partnerKey = (await mintKey(server.ctx, { subjectType: 'partner', subjectId: a.partnerId })).key;
    const all = await client(server.base, partnerKey).get('/orgs');
    assert.equal(all.status, 200);
    assert.deepEqual(all.body.items.map((o: { orgId: string }) => o.orgId).sort(), [a.orgId, b.orgId].sort());
    const names = all.body.items.map((o: { name: string }) => o.name);
    assert.deepEqual(names, [...names].sort());
    const item = all.body.items.find((o: { orgId: string }) => o.orgId === a.orgId);
    assert.deepEqual(Object.keys(item).sort(), ['enterpriseId', 'enterpriseName', 'name', 'orgId', 'partnerId', 'partnerName']);
    assert.equal(item.enterpriseId, a.enterpriseId);
    assert.equal(item.partnerId, a.partnerId);
    assert.ok(!all.body.items.some((o: { orgId: string }) => o.orgId === elsewhere.orgId));

    const page1 = await client(server.base, partnerKey).get('/orgs?limit=1');
    const page2 = await client(server.base, partnerKey).get(`/orgs?limit=1&cursor=${page1.body.nextCursor}`);
    assert.deepEqual(
      [page1.body.items[0].orgId, page2.body.items[0].orgId],
      all.body.items.map((o: { orgId: string }) => o.orgId),
    );
    assert.equal(page2.body.nextCursor, null);

    const narrowed = (await mintKey(server.ctx, { subjectType: 'partner', subjectId: a.partnerId, allowedOrgIds: [b.orgId] })).key;
    assert.deepEqual(
      (await client(server.base, narrowed).get('/orgs')).body.items.map((o: { orgId: string }) => o.orgId),
      [b.orgId],
    );
    const orgKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: elsewhere.orgId, permissions: ['read'] })).key;
    assert.deepEqual(
      (await client(server.base, orgKey).get('/orgs')).body.items.map((o: { orgId: string }) => o.orgId),
      [elsewhere.orgId],
    );
    assert.equal((await client(server.base).get('/orgs')).status, 401);
  });
});
