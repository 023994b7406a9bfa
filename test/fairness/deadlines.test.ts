import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevices } from '../../src/domain/devices/service.js';
import { updateOrg } from '../../src/domain/orgs/service.js';
import { eventually, feedOf } from '../deadlines/support.js';
import WebSocket from 'ws';
import { connectDevice, type TestDevice } from '../devices/support.js';
import { type AlertPathFigures, AlertPathProbe, abuseLoop, assertFairShare } from '../helpers/alert-path.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, scrapeMetrics, startTestServer, type TestServer } from '../helpers/server.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const OVERDUE = 'emergency.delivery_overdue';
const COMPLETED = 'emergency.delivery_completed';
const DEVICES = 500;
const CONNECTED = 300;

/** The counter of overdue events looked at for completion, as /metrics shows it. */
async function watchChecks(url: string): Promise<number> {
  return Number(/^emergency_delivery_watch_checks_total (\d+)/m.exec(await scrapeMetrics(url))?.[1] ?? Number.NaN);
}

/**
 * Extensions §13 for acknowledgement deadlines (§7): tenant A sets the shortest deadline and has hundreds of base stations
 * that never acknowledge (some of them connected), and declares ten times a second. Tenant B's alert path is measured
 * while A's re-sends and deadlines fall due, and again once A's overdue events wait for acknowledgements that never come.
 */
describe('fair share: acknowledgement deadlines of a tenant whose base stations never acknowledge', () => {
  let server: TestServer;
  let probe: AlertPathProbe;
  let quiet: AlertPathFigures;
  let org: Awaited<ReturnType<typeof createOrgTree>>;
  let api: ReturnType<typeof client>;
  /** The connected station whose frames the tests read; the others only hold their sockets open. */
  let watched: TestDevice;
  const others: WebSocket[] = [];
  let declares = 0;
  before(async () => {
    server = await startTestServer();
    probe = await AlertPathProbe.open(server);
    org = await createOrgTree(server.ctx);
    api = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    await updateOrg(server.ctx, operatorCaller(), org.orgId, { ackDeadlineSeconds: 5 });
    const devices = await createDevices(
      server.ctx,
      operatorCaller(),
      org.orgId,
      Array.from({ length: DEVICES }, (_, i) => `Silent ${i}`),
    );
    const wsUrl = `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`;
    watched = await connectDevice(wsUrl, devices[0]!.token, { autoPong: true });
    // The other stations run in this process too: they drop their frames unread, so that what the test measures is the
    // service's work, not its clients' parsing.
    for (const d of devices.slice(1, CONNECTED)) {
      const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${d.token}` }, autoPong: true });
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      others.push(ws);
    }
    // The connections' presence writes settle before the quiet figures are taken.
    await sleep(1_500);
    quiet = await probe.measure(30);
  });
  after(async () => {
    for (const ws of others) ws.close();
    await watched?.close();
    await probe?.close();
    await server?.close();
  });

  it('10 declares a second with a 5 s deadline: tenant B keeps its share while the re-sends and deadlines fall due', async (t) => {
    const abuse = abuseLoop(async (i) => {
      const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire', description: `silent ${i}` });
      if (declared.status === 201) declares++;
      await sleep(100);
    });
    // Declares for 6 s; the half-way re-sends fall due from 2.5 s, the deadlines from 5 s to 11 s: B is measured throughout.
    const stopping = sleep(6_000).then(() => abuse.stop());
    await sleep(2_000);
    const abused = await probe.measure(90, 100);
    await stopping;
    assert.ok(declares >= 10, `tenant A declared ${declares} times`);
    t.diagnostic(
      `${declares} declares; quiet p50/p99 ${quiet.p50.toFixed(1)}/${quiet.p99.toFixed(1)} ms, abused ${abused.p50.toFixed(1)}/${abused.p99.toFixed(1)} ms`,
    );
    assertFairShare(quiet, abused, 'acknowledgement deadlines falling due');

    // Every declare went overdue once, naming at most 100 of the silent devices and counting all of them.
    const overdue = await eventually(
      'every overdue event',
      () => feedOf({ api, orgId: org.orgId }, OVERDUE).then((items) => (items.length >= declares ? items : null)),
      10_000,
      250,
    );
    assert.equal(overdue.length, declares);
    for (const item of overdue) {
      assert.equal(item.event.data.silentDevicesTotal, DEVICES);
      assert.equal(item.event.data.silentDevices.length, 100);
    }
    // Re-sends were rate-limited per device: far fewer frames than one per silent connected device and declare.
    const device = watched;
    const declaredOffsets = new Set(device.events.filter((e) => e.event.eventType === 'emergency.declared').map((e) => e.offset));
    const copies = device.events.filter((e) => declaredOffsets.has(e.offset)).length - declaredOffsets.size;
    assert.ok(copies < declaredOffsets.size, `one device got ${copies} re-sends of ${declaredOffsets.size} declares`);
  });

  it('after the abuse: the overdue events cost nothing while no acknowledgement comes, and B keeps its share', async (t) => {
    // Each overdue event is looked at once as it goes overdue; then, without acknowledgements, never again.
    await eventually('the look at each new overdue event', async () => (await watchChecks(server.url)) >= declares, 10_000, 100);
    const before = await watchChecks(server.url);
    const after = await probe.measure(30, 100);
    t.diagnostic(`overdue events outstanding: p50/p99 ${after.p50.toFixed(1)}/${after.p99.toFixed(1)} ms`);
    assertFairShare(quiet, after, 'overdue events outstanding');
    assert.equal(await watchChecks(server.url), before, 'no overdue event was looked at again without an acknowledgement');

    // One device acknowledges everything it was sent: each overdue event it covers is looked at once, none completes.
    const device = watched;
    device.send({ type: 'ack', offset: Math.max(...device.offsets()) });
    await eventually('the looks the acknowledgement caused', async () => (await watchChecks(server.url)) - before >= declares, 10_000, 100);
    await sleep(1_500);
    assert.equal((await watchChecks(server.url)) - before, declares, 'each overdue event it covers looked at once, and not again');
    assert.deepEqual(await feedOf({ api, orgId: org.orgId }, COMPLETED), [], 'the other devices are still silent');
  });
});
