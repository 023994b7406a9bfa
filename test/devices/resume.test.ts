import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { declareEmergency } from '../../src/domain/emergencies/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { connectDevice, type DeviceTestServer, runConcurrently, startDeviceServer, type TestDevice } from './support.js';

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('device resume', () => {
  let server: DeviceTestServer;
  before(async () => {
    // Small pages so that replays and the live reader both cross many page boundaries.
    server = await startDeviceServer({ eventLog: { pageSize: 16, pollIntervalMs: 100 } });
  });
  after(() => server.close());

  it('has no gap and no duplicate when replays race with 500 concurrent commits', async () => {
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const api = client(server.base, key);
    const device = async (name: string) => (await createDevice(server.ctx, operatorCaller(), org.orgId, { name })).token;
    const [tokenReplay, tokenLive, tokenFlappy] = await Promise.all([device('replay'), device('live'), device('flappy')]);
    const declare = async () => {
      assert.equal((await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'race' })).status, 201);
    };
    await runConcurrently(100, 4, declare);
    const total = 600;

    const live = await connectDevice(server.wsUrl, tokenLive); // from the present: offsets 101..600
    let writing = true;
    const writer = runConcurrently(total - 100, 6, declare).finally(() => {
      writing = false;
    });
    // Connects while commits are landing and replays everything from the start.
    const replay = await connectDevice(server.wsUrl, tokenReplay, { after: 0 });

    // Disconnects every 20-60 events and resumes from the last offset it received, while commits continue.
    const flappyOffsets: number[] = [];
    let reconnects = 0;
    const flappy = (async () => {
      let last = 0;
      while (last < total) {
        const ws: TestDevice = await connectDevice(server.wsUrl, tokenFlappy, { after: last });
        const quota = 20 + Math.floor(Math.random() * 40);
        await ws.until(() => ws.events.length >= quota || ws.offsets().at(-1) === total, 20_000, 'flappy progress');
        await ws.close();
        flappyOffsets.push(...ws.offsets());
        last = ws.offsets().at(-1) ?? last;
        reconnects++;
      }
    })();

    await writer;
    assert.equal(writing, false);
    await replay.until(() => replay.events.length >= total, 20_000, 'the replaying device to reach the end');
    await live.until(() => live.events.length >= total - 100, 20_000, 'the live device to reach the end');
    await flappy;

    assert.deepEqual(replay.offsets(), range(1, total));
    assert.deepEqual(live.offsets(), range(101, total));
    assert.deepEqual(flappyOffsets, range(1, total));
    assert.ok(reconnects >= 5, `resumed ${reconnects} times`);
    // Offsets name the same events for every device.
    const ids = new Map(replay.events.map((e) => [e.offset, e.event.eventId]));
    assert.equal(new Set(ids.values()).size, total);
    for (const e of live.events) assert.equal(e.event.eventId, ids.get(e.offset));
    await Promise.all([replay.close(), live.close()]);
  });

  it('delivers events committed by another process (woken by the poll, not the in-process bus)', async () => {
    const org = await createOrgTree(server.ctx);
    const device = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'poll' });
    const ws = await connectDevice(server.wsUrl, device.token);
    // A second connection to the same database with its own bus: like the admin CLI or another instance.
    const other = createContext(loadConfig({ DATABASE_URL: server.databaseUrl, LOG_LEVEL: 'silent' }));
    try {
      const declared = await declareEmergency(other, operatorCaller(), org.orgId, { description: 'from elsewhere' });
      await ws.until(() => ws.events.length === 1, 5_000, 'the event written elsewhere');
      assert.equal(ws.events[0]!.event.emergencyId, declared.emergencyId);
    } finally {
      await other.db.close();
      await ws.close();
    }
  });
});
