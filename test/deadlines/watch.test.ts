import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { scrapeMetrics, startTestServer, type TestServer } from '../helpers/server.js';
import { type DeadlineOrg, deadlineOrg, eventually, feedOf, registerDevice, sleep, watchDevice } from './support.js';

const OVERDUE = 'emergency.delivery_overdue';
const COMPLETED = 'emergency.delivery_completed';
/** The watch of an overdue event, shortened from ACK_WATCH_HOURS for the test. */
const WATCH_MS = 4_000;

/**
 * The bounds of extensions §13 on acknowledgement deadlines, as a user sees them: an overdue event is watched for a set time
 * after its deadline, then the overdue event stays the last word; half-way re-sends are limited per base station.
 */
describe('acknowledgement deadlines: the end of a watch and the re-send limit', { concurrency: true }, () => {
  let server: TestServer;
  let wsUrl: string;
  before(async () => {
    server = await startTestServer({ ACK_RESENDS_PER_DEVICE_PER_MINUTE: '2' }, { deadlines: { watchMs: WATCH_MS } });
    wsUrl = `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`;
  });
  after(async () => {
    await server?.close();
  });

  /** An org with a 5 s deadline and one connected base station that acknowledges nothing by itself. */
  async function silentOrg(): Promise<{ org: DeadlineOrg; station: Awaited<ReturnType<typeof watchDevice>> }> {
    const org = await deadlineOrg(server.ctx, server.url);
    assert.equal((await org.admin.patch(`/orgs/${org.orgId}`, { ackDeadlineSeconds: 5 })).status, 200);
    const station = await watchDevice(wsUrl, (await registerDevice(org, 'Silent station')).token, false);
    return { org, station };
  }

  it('an acknowledgement within the watch completes the delivery; one after the watch ended does not, and the event stays overdue', async () => {
    const within = await silentOrg();
    const late = await silentOrg();
    const declared = await Promise.all([within, late].map(({ org }) => org.api.post(`/orgs/${org.orgId}/emergencies`, { description: 'watch test' })));
    for (const res of declared) assert.equal(res.status, 201);
    const overdueOf = (station: typeof within.station) => eventually('the overdue frame', () => station.ofType(OVERDUE)[0], 10_000, 10);
    const [withinOverdue, lateOverdue] = await Promise.all([overdueOf(within.station), overdueOf(late.station)]);

    within.station.ack(withinOverdue.offset);
    await eventually('the completed event within the watch', () => within.station.ofType(COMPLETED)[0], 5_000);

    // Past the watch (it ends WATCH_MS after the deadline), the late station acknowledges: nothing follows the overdue event.
    await sleep(WATCH_MS + 1_000);
    late.station.ack(lateOverdue.offset);
    await sleep(2_500);
    assert.deepEqual(await feedOf(late.org, COMPLETED), []);
    assert.deepEqual(
      late.station.device.events.map((f) => f.event.eventType),
      ['emergency.declared', 'emergency.declared', OVERDUE],
      'the declared event, its re-send and the overdue event: the last word',
    );
    const receipts = await late.org.api.get(`/orgs/${late.org.orgId}/emergencies/${declared[1]!.body.emergencyId}/receipts`);
    assert.equal(receipts.body.events[0].overdue, true);
    assert.equal(receipts.body.events[0].devices.acknowledged, 1, 'the acknowledgement itself is recorded');
    await Promise.all([within.station.device.close(), late.station.device.close()]);
  });

  it('revoking the last silent station completes the delivery without any acknowledgement', async () => {
    const org = await deadlineOrg(server.ctx, server.url);
    assert.equal((await org.admin.patch(`/orgs/${org.orgId}`, { ackDeadlineSeconds: 5 })).status, 200);
    const silent = await registerDevice(org, 'Decommissioned station');
    const declared = await org.api.post(`/orgs/${org.orgId}/emergencies`, { description: 'revocation test' });
    assert.equal(declared.status, 201);
    await eventually('the overdue event', () => feedOf(org, OVERDUE).then((items) => items.length === 1), 10_000, 100);
    assert.equal((await org.admin.post(`/devices/${silent.id}/revoke`, {})).status, 200);
    const [completed] = await eventually('the completed event', () => feedOf(org, COMPLETED).then((items) => (items.length > 0 ? items : null)), 5_000, 100);
    assert.equal(completed.event.emergencyId, declared.body.emergencyId);
    assert.equal(completed.event.data.targeted, 0);
  });

  it('re-sends to one base station stop at its allowance; each station has its own', async () => {
    const { org, station } = await silentOrg();
    const other = await watchDevice(wsUrl, (await registerDevice(org, 'Second silent station')).token, false);
    const before = Number(/^device_event_resends_limited_total (\d+)/m.exec(await scrapeMetrics(server.url))?.[1] ?? 0);
    for (let i = 0; i < 5; i++) assert.equal((await org.api.post(`/orgs/${org.orgId}/emergencies`, { description: `burst ${i}` })).status, 201);
    // The re-sends fall due 2.5 s after the declares; the deadlines at 5 s.
    await eventually('the overdue frames', () => station.ofType(OVERDUE).length === 5 && other.ofType(OVERDUE).length === 5, 10_000);
    for (const s of [station, other]) {
      const declared = s.ofType('emergency.declared');
      const offsets = new Set(declared.map((f) => f.offset));
      assert.equal(offsets.size, 5, 'each declare reached the station');
      assert.equal(declared.length - offsets.size, 2, 'two re-sends (ACK_RESENDS_PER_DEVICE_PER_MINUTE=2), not five');
    }
    const limited = Number(/^device_event_resends_limited_total (\d+)/m.exec(await scrapeMetrics(server.url))?.[1] ?? 0);
    assert.ok(limited - before >= 6, `re-sends held back: ${limited - before}`);
    await Promise.all([station.device.close(), other.device.close()]);
  });
});
