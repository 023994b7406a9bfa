import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice, listDevices, revokeDevice } from '../../src/domain/devices/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { connectDevice, type DeviceTestServer, refusedUpgrade, runConcurrently, startDeviceServer } from './support.js';

describe('device gateway', () => {
  let server: DeviceTestServer;
  before(async () => {
    // Short revocation check so the revoked-socket test does not wait 5 s; everything else at defaults.
    server = await startDeviceServer({ devices: { revocationCheckMs: 100, ackFlushMs: 50 } });
  });
  after(() => server.close());

  /** The org's events as stored, in offset order: what every device of the org must have been sent. */
  function storedEvents(orgId: string) {
    return server.ctx.db.db.selectFrom('events').select(['stream_offset', 'payload']).where('org_id', '=', orgId).orderBy('stream_offset').execute();
  }

  async function orgWithDevice(name = 'Lobby base station') {
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const device = await createDevice(server.ctx, operatorCaller(), org.orgId, { name });
    return { org, api: client(server.base, key), device };
  }

  it('pushes every transition declared over REST within a second, as the stored envelope', async () => {
    const { org, api, device } = await orgWithDevice();
    const ws = await connectDevice(server.wsUrl, device.token);
    const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire', description: 'Smoke on floor 2', location: { floorId: '2' } });
    assert.equal(declared.status, 201);
    const id = declared.body.emergencyId;
    await ws.until(() => ws.events.some((e) => e.event.emergencyId === id), 1_000, 'the declared event within 1 s');
    await api.patch(`/orgs/${org.orgId}/emergencies/${id}`, { categoryName: 'Medical' });
    await api.post(`/orgs/${org.orgId}/emergencies/${id}/resolutions`, { resolutionNote: 'all clear' });
    await ws.until(() => ws.events.length === 3, 2_000, 'three events');

    assert.deepEqual(
      ws.events.map((e) => [e.offset, e.event.eventType, e.event.sequence]),
      [
        [1, 'emergency.declared', 1],
        [2, 'emergency.categorized', 2],
        [3, 'emergency.resolved', 3],
      ],
    );
    const first = ws.events[0]!;
    assert.deepEqual(Object.keys(first).sort(), ['event', 'offset', 'type']);
    assert.equal(first.event.orgId, org.orgId);
    assert.equal(first.event.data.emergency.description, 'Smoke on floor 2');
    assert.equal(first.event.data.emergency.category.name, 'Fire');
    const stored = await storedEvents(org.orgId);
    assert.deepEqual(
      ws.events.map((e) => e.event),
      stored.map((r) => JSON.parse(r.payload)),
    );

    ws.send({ type: 'ack', offset: 3 });
    await ws.until(() => false, 300, 'ack flush').catch(() => undefined);
    const [listed] = await listDevices(server.ctx, operatorCaller(), { orgId: org.orgId });
    assert.equal(listed!.online, true);
    assert.equal(listed!.ackedOffset, 3);
    assert.ok(listed!.lastSeenAt);
    await ws.close();
    const [afterClose] = await waitForDevice(server, org.orgId, (d) => !d.online);
    assert.equal(afterClose!.online, false);
    assert.ok(afterClose!.disconnectedAt);
  });

  it('pushes concurrent declares and changes of one org in offset order, each frame the event stored at its offset', async () => {
    // Concurrent declares of one org are committed together (SQLite's group commit, PostgreSQL's batched
    // insert) and handed to the live reader with the offsets they took; changes commit on their own.
    const { org, api, device } = await orgWithDevice();
    const other = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Gate base station' });
    const first = await connectDevice(server.wsUrl, device.token);
    const second = await connectDevice(server.wsUrl, other.token);
    const ids: string[] = [];
    await runConcurrently(60, 20, async (i) => {
      if (i % 4 === 3 && ids.length > 0) {
        const res = await api.patch(`/orgs/${org.orgId}/emergencies/${ids[i % ids.length]}`, { categoryName: i % 8 === 3 ? 'Medical' : 'Fire' });
        assert.ok(res.status === 200 || res.status === 409, `re-categorize answered ${res.status}`);
        return;
      }
      const res = await api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire', description: `Concurrent ${i}` });
      assert.equal(res.status, 201);
      ids.push(res.body.emergencyId);
    });
    const stored = await storedEvents(org.orgId);
    assert.ok(stored.length >= 45, `${stored.length} events stored`);
    for (const ws of [first, second]) {
      await ws.until(() => ws.events.length >= stored.length, 5_000, `${stored.length} events`);
      assert.deepEqual(
        ws.events.map((e) => [e.offset, e.event]),
        stored.map((r) => [Number(r.stream_offset), JSON.parse(r.payload)]),
      );
      await ws.close();
    }
  });

  it('keeps organizations apart', async () => {
    const a = await orgWithDevice('A');
    const b = await orgWithDevice('B');
    const wsA = await connectDevice(server.wsUrl, a.device.token);
    const wsB = await connectDevice(server.wsUrl, b.device.token);
    const inA = await a.api.post(`/orgs/${a.org.orgId}/emergencies`, { description: 'only for A' });
    const inB = await b.api.post(`/orgs/${b.org.orgId}/emergencies`, { description: 'only for B' });
    await wsA.until(() => wsA.events.length === 1);
    await wsB.until(() => wsB.events.length === 1);
    // B's own event arriving after A's commit shows that A's had its chance to (wrongly) arrive.
    assert.equal(wsA.events[0]!.event.emergencyId, inA.body.emergencyId);
    assert.equal(wsB.events[0]!.event.emergencyId, inB.body.emergencyId);
    // A device's key to another org cannot replay it either: offsets are per org.
    const replayB = await connectDevice(server.wsUrl, b.device.token, { after: 0 });
    await replayB.until(() => replayB.events.length === 1);
    assert.equal(replayB.events[0]!.event.orgId, b.org.orgId);
    await Promise.all([wsA.close(), wsB.close(), replayB.close()]);
  });

  it('refuses missing, malformed, unknown and revoked tokens with 401 before the upgrade', async () => {
    const { org, device } = await orgWithDevice();
    const wrongSecret = device.token.slice(0, -4) + (device.token.endsWith('0000') ? '1111' : '0000');
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer nope' },
      { authorization: `Bearer ${wrongSecret}` },
      { authorization: `Basic ${device.token}` },
      { authorization: `Bearer ${key}` }, // an API key is not a device credential
    ]) {
      const res = await refusedUpgrade(server.wsUrl, headers);
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.equal(res.headers['www-authenticate'], 'Bearer');
      assert.equal(res.body.detail.error, 'unauthenticated');
    }
    const badAfter = await refusedUpgrade(server.wsUrl, { authorization: `Bearer ${device.token}` }, '?after=-1');
    assert.equal(badAfter.status, 400);
    const wrongPath = await refusedUpgrade(server.wsUrl.replace('/stream', '/other'), { authorization: `Bearer ${device.token}` });
    assert.equal(wrongPath.status, 404);

    const ws = await connectDevice(server.wsUrl, device.token);
    await revokeDevice(server.ctx, operatorCaller(), device.id);
    await ws.closed;
    assert.equal(ws.closeCode, 4401);
    const revoked = await refusedUpgrade(server.wsUrl, { authorization: `Bearer ${device.token}` });
    assert.equal(revoked.status, 401);
    const audit = await server.ctx.db.db
      .selectFrom('audit_logs')
      .select(['event_type', 'resource_id'])
      .where('org_id', '=', org.orgId)
      .where('event_category', '=', 'device')
      .orderBy('occurred_at')
      .execute();
    assert.deepEqual(
      audit.map((a) => a.event_type),
      ['device.created', 'device.revoked'],
    );
    assert.ok(audit.every((a) => a.resource_id === device.id));
  });

  it('replays exactly the events missed while disconnected, then continues live', async () => {
    const { org, api, device } = await orgWithDevice();
    const declare = async (n: number) => {
      for (let i = 0; i < n; i++) assert.equal((await api.post(`/orgs/${org.orgId}/emergencies`, { description: `e${i}` })).status, 201);
    };
    const first = await connectDevice(server.wsUrl, device.token);
    await declare(3);
    await first.until(() => first.events.length === 3);
    await first.close();
    await declare(4); // offsets 4..7, committed while the device is away
    const resumed = await connectDevice(server.wsUrl, device.token, { after: 3 });
    await resumed.until(() => resumed.events.length === 4);
    await declare(1);
    await resumed.until(() => resumed.events.length === 5);
    assert.deepEqual(resumed.offsets(), [4, 5, 6, 7, 8]);
    // Without `after` a device starts at the present; `after` beyond the end starts at the end.
    const fresh = await connectDevice(server.wsUrl, device.token, { after: 1_000 });
    assert.equal(resumed.closeCode === null || resumed.closeCode === 4409, true);
    await declare(1);
    await fresh.until(() => fresh.events.length === 1);
    assert.deepEqual(fresh.offsets(), [9]);
    await resumed.closed;
    assert.equal(resumed.closeCode, 4409, 'the older connection of the same device is replaced');
    await fresh.close();
  });

  it('ignores acks beyond what it sent, and closes on frames that are not JSON objects', async () => {
    const { org, api, device } = await orgWithDevice();
    const ws = await connectDevice(server.wsUrl, device.token);
    await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'one' });
    await ws.until(() => ws.events.length === 1);
    ws.send({ type: 'ack', offset: 99 }); // never sent: not recorded
    ws.send({ type: 'status', battery: 80 }); // unknown types are ignored
    ws.send({ type: 'ack', offset: 1 });
    const recorded = async () => (await listDevices(server.ctx, operatorCaller(), { orgId: org.orgId }))[0]!.ackedOffset;
    for (let i = 0; i < 100 && (await recorded()) !== 1; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await recorded(), 1);
    assert.equal(ws.closeCode, null);
    ws.ws.send('not json');
    await ws.closed;
    assert.equal(ws.closeCode, 1007);
  });

  it('sends ping frames and drops a device that stays silent', async () => {
    const quick = await startDeviceServer({ databaseUrl: server.databaseUrl, devices: { pingIntervalMs: 100, silenceTimeoutMs: 600 } });
    try {
      const { device } = await orgWithDevice();
      // autoPong off: this client never answers anything, like a hung base station.
      const silent = await connectDevice(quick.wsUrl, device.token, { autoPong: false });
      await silent.until(() => silent.frames.some((f) => f.type === 'ping'), 2_000, 'a ping frame');
      assert.deepEqual(
        silent.frames.find((f) => f.type === 'ping'),
        { type: 'ping' },
      );
      await silent.until(() => silent.closeCode !== null, 10_000, 'the silent device to be dropped');
      assert.equal(silent.closeCode, 4408);

      // A device that answers (here with WebSocket pongs and pong frames) stays connected.
      const alive = await connectDevice(quick.wsUrl, device.token);
      alive.ws.on('message', () => alive.send({ type: 'pong' }));
      await alive.until(() => alive.frames.filter((f) => f.type === 'ping').length >= 10, 5_000, 'ten pings');
      assert.equal(alive.closeCode, null);
      await alive.close();
    } finally {
      await quick.close();
    }
  });

  it('disconnects a device that does not read instead of buffering without bound, and it resumes losslessly', async () => {
    const slowServer = await startDeviceServer({ databaseUrl: server.databaseUrl, devices: { maxBufferedBytes: 64 * 1024, closeGraceMs: 30_000 } });
    try {
      const { org, api, device } = await orgWithDevice();
      const slow = await connectDevice(slowServer.wsUrl, device.token);
      // Live first (a connection still replaying is paced by its device instead of cut off).
      assert.equal((await api.post(`/orgs/${org.orgId}/emergencies`, {})).status, 201);
      await slow.until(() => slow.offsets().length === 1, 10_000, 'the first live frame');
      slow.ws.pause(); // stops reading the socket: kernel buffers fill, then the server's
      const metadata = { blob: 'x'.repeat(16_000) };
      // About 7 MB of frames: more than loopback socket buffers hold, so the server's own buffer grows.
      const declared = 451;
      await runConcurrently(declared - 1, 4, async () => {
        assert.equal((await api.post(`/orgs/${org.orgId}/emergencies`, { metadata })).status, 201);
      });
      slow.ws.resume();
      // Bounded: a server that never cuts the device off must fail this test, not hang the suite.
      await slow.until(() => slow.closeCode !== null, 60_000, 'the server to disconnect the slow device');
      assert.equal(slow.closeCode, 4429);
      const got = slow.offsets();
      assert.ok(got.length < declared, `the slow device was cut off (got ${got.length} of ${declared})`);
      assert.deepEqual(
        got,
        got.map((_, i) => i + 1),
        'what it did get is a gap-free prefix',
      );
      const resumed = await connectDevice(slowServer.wsUrl, device.token, { after: got.at(-1) ?? 0 });

      await resumed.until(() => resumed.events.length === declared - got.length, 20_000, 'the rest');
      assert.deepEqual(
        [...got, ...resumed.offsets()],
        Array.from({ length: declared }, (_, i) => i + 1),
      );
      await resumed.close();
    } finally {
      await slowServer.close();
    }
  });
});

async function waitForDevice(server: DeviceTestServer, orgId: string, predicate: (d: Awaited<ReturnType<typeof listDevices>>[number]) => boolean) {
  for (let i = 0; i < 100; i++) {
    const list = await listDevices(server.ctx, operatorCaller(), { orgId });
    if (list.every(predicate)) return list;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('device state did not change');
}
