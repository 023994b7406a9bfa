import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, scrapeMetrics } from '../helpers/server.js';
import { connectDevice, type DeviceTestServer, runConcurrently, startDeviceServer, type TestDevice } from './support.js';

const DEVICES = 300;
const PAGE_SIZE = 16;
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function replayReads(server: DeviceTestServer): Promise<number> {
  const text = await scrapeMetrics(server.url);
  const line = text.split('\n').find((l) => l.startsWith('device_replay_reads_total '));
  assert.ok(line, 'device_replay_reads_total is exported');
  return Number(line.split(' ')[1]);
}

describe('device reconnect storm', () => {
  let server: DeviceTestServer;
  before(async () => {
    // Small pages so that the missed events span several pages.
    server = await startDeviceServer({ eventLog: { pageSize: PAGE_SIZE, pollIntervalMs: 100 } });
  });
  after(() => server.close());

  it('catches every device up with a few shared reads, not one per device', async () => {
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const api = client(server.base, key);
    const declare = async () => {
      assert.equal((await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'storm' })).status, 201);
    };
    const tokens: string[] = [];
    await runConcurrently(DEVICES, 8, async (i) => {
      tokens[i] = (await createDevice(server.ctx, operatorCaller(), org.orgId, { name: `station-${i}` })).token;
    });

    // Offsets 1..3 before the devices connect, 4..5 while they are live.
    await runConcurrently(3, 1, declare);
    const first: TestDevice[] = [];
    await runConcurrently(DEVICES, 50, async (i) => {
      first[i] = await connectDevice(server.wsUrl, tokens[i]!);
    });
    await runConcurrently(2, 1, declare);
    for (const device of first) await device.until(() => device.events.length >= 2, 10_000, 'the live events');
    for (const device of first) assert.deepEqual(device.offsets(), [4, 5]);

    // Their gateway is gone: every socket drops at once, and the org goes on declaring meanwhile.
    for (const device of first) device.ws.terminate();
    await Promise.all(first.map((d) => d.closed));
    const missedThrough = 45;
    await runConcurrently(missedThrough - 5, 1, declare);

    // Two thirds resume after the last event they handled, the rest from a nearby offset.
    const resumeAt = (i: number) => (i % 3 === 2 ? 8 : 5);
    const readsBefore = await replayReads(server);
    const second: TestDevice[] = [];
    await Promise.all(
      tokens.map(async (token, i) => {
        second[i] = await connectDevice(server.wsUrl, token, { after: resumeAt(i) });
      }),
    );
    for (const [i, device] of second.entries()) {
      const expected = range(resumeAt(i) + 1, missedThrough);
      await device.until(() => device.events.length >= expected.length, 20_000, `device ${i} to catch up`);
      assert.deepEqual(device.offsets(), expected, `device ${i} gets exactly the events it missed`);
    }
    const reads = (await replayReads(server)) - readsBefore;
    // Unshared, each device would read its own pages: about DEVICES × 3. Shared: one per page of each range,
    // and a few more when a group's first read starts before the other group's covering page is in.
    const pagesPerRange = Math.ceil((missedThrough - 5) / PAGE_SIZE);
    assert.ok(reads >= 1, 'the resumes read from the database');
    assert.ok(reads <= 2 * (pagesPerRange + 1), `${reads} replay reads for ${DEVICES} devices resuming from 2 offsets`);

    // Nothing more arrives: no device got an event twice or beyond the stream.
    await declare();
    for (const [i, device] of second.entries()) {
      await device.until(() => device.offsets().at(-1) === missedThrough + 1, 10_000, 'the next live event');
      assert.deepEqual(device.offsets(), range(resumeAt(i) + 1, missedThrough + 1));
    }
    await Promise.all(second.map((d) => d.close()));
  });
});
