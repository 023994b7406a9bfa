import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Receiver, startReceiver, verify } from '../delivery/helpers.js';
import { type DeviceTestServer, startDeviceServer } from '../devices/support.js';
import { scrapeMetrics } from '../helpers/server.js';
import { deadlineOrg, eventually, feedOf, registerDevice, sleep, watchDevice } from './support.js';

const OVERDUE = 'emergency.delivery_overdue';
const COMPLETED = 'emergency.delivery_completed';

/**
 * Acknowledgement deadlines end to end on a real server with real WebSocket base stations, an HTTP
 * webhook receiver and the admin API. The timed cases run concurrently, each in an org of its own.
 */
describe('acknowledgement deadlines', { concurrency: true }, () => {
  let server: DeviceTestServer;
  let receiver: Receiver;
  before(async () => {
    server = await startDeviceServer();
    receiver = await startReceiver();
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
  });

  it('is set per org and per category over the admin API, shown by GET, refused out of range, audited and replayable', async () => {
    const org = await deadlineOrg(server.ctx, server.url);
    const before = await org.admin.get(`/orgs/${org.orgId}`);
    assert.equal(before.status, 200);
    assert.equal(before.body.ackDeadlineSeconds, null, 'off by default');

    const set = await org.admin.patch(`/orgs/${org.orgId.toUpperCase()}`, { ackDeadlineSeconds: 30 }, { 'idempotency-key': 'set-deadline-1' });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.equal(set.body.ackDeadlineSeconds, 30);
    assert.equal(set.body.orgId, org.orgId);
    assert.equal((await org.admin.get(`/orgs/${org.orgId}`)).body.ackDeadlineSeconds, 30);
    const replayed = await org.admin.patch(`/orgs/${org.orgId.toUpperCase()}`, { ackDeadlineSeconds: 30 }, { 'idempotency-key': 'set-deadline-1' });
    assert.equal(replayed.status, 200);
    assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replayed.body, set.body);

    const audit = await org.api.get(`/orgs/${org.orgId}/audit-logs?eventCategory=org`);
    assert.equal(audit.status, 200);
    assert.equal(audit.body.items.length, 1, 'one audit entry (the replay wrote none)');
    assert.equal(audit.body.items[0].eventType, 'org.updated');
    assert.equal(audit.body.items[0].actor.type, 'admin_key');
    assert.deepEqual(audit.body.items[0].details, { ackDeadlineSeconds: 30, previousAckDeadlineSeconds: null });

    for (const bad of [4, 3601, 0, -5, 7.5, '30', true]) {
      const res = await org.admin.patch(`/orgs/${org.orgId}`, { ackDeadlineSeconds: bad });
      assert.equal(res.status, 422, `ackDeadlineSeconds ${JSON.stringify(bad)}`);
      assert.deepEqual(res.body.detail[0].loc, ['body', 'ackDeadlineSeconds'], `ackDeadlineSeconds ${JSON.stringify(bad)}`);
      const category = await org.admin.patch(`/orgs/${org.orgId}/categories/${org.categories.Fire}`, { ackDeadlineSeconds: bad });
      assert.equal(category.status, 422, `category ackDeadlineSeconds ${JSON.stringify(bad)}`);
      assert.deepEqual(category.body.detail[0].loc, ['body', 'ackDeadlineSeconds']);
    }
    const misspelt = await org.admin.patch(`/orgs/${org.orgId}`, { ackDeadline: 30 });
    assert.equal(misspelt.status, 422);
    assert.equal(misspelt.body.detail[0].type, 'extra_forbidden');
    assert.equal((await org.admin.patch(`/orgs/${org.orgId}`, {})).status, 422, 'an empty change');
    assert.equal((await org.admin.get(`/orgs/${org.orgId}`)).body.ackDeadlineSeconds, 30, 'refused changes changed nothing');

    const category = await org.admin.patch(`/orgs/${org.orgId}/categories/${org.categories.Fire}`, { ackDeadlineSeconds: 3600 });
    assert.equal(category.status, 200, JSON.stringify(category.body));
    assert.equal(category.body.ackDeadlineSeconds, 3600);
    const listed = await org.api.get(`/orgs/${org.orgId}/emergencies/categories`);
    const byId = new Map(listed.body.items.map((c: any) => [c.categoryId, c.ackDeadlineSeconds]));
    assert.equal(byId.get(org.categories.Fire), 3600);
    assert.equal(byId.get(org.categories.Medical), null, 'inherits the org');
    assert.equal((await org.admin.patch(`/orgs/${org.orgId}/categories/${org.categories.Fire}`, { ackDeadlineSeconds: null })).body.ackDeadlineSeconds, null);

    const renamed = await org.admin.patch(`/orgs/${org.orgId}`, { name: 'Renamed org', ackDeadlineSeconds: null });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.name, 'Renamed org');
    assert.equal(renamed.body.ackDeadlineSeconds, null, 'null turns it off');
  });

  it('5 s deadline: a re-send half-way to the silent device only, one overdue naming it 5 to 7 s after the declare, one completed once it acknowledges', async () => {
    const org = await deadlineOrg(server.ctx, server.url);
    assert.equal((await org.admin.patch(`/orgs/${org.orgId}`, { ackDeadlineSeconds: 5 })).status, 200);
    const ackingDevice = await registerDevice(org, 'Acking station');
    const silentDevice = await registerDevice(org, 'Silent station');
    const acking = await watchDevice(server.wsUrl, ackingDevice.token, true);
    const silent = await watchDevice(server.wsUrl, silentDevice.token, false);

    const declaredAt = Date.now();
    const declared = await org.api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire', description: 'deadline test' });
    assert.equal(declared.status, 201);
    const emergencyId = declared.body.emergencyId;

    const overdueFrame = await eventually('the overdue event at the acking device', () => acking.ofType(OVERDUE)[0], 10_000, 10);
    const overdueAt = acking.arrivals[acking.device.events.indexOf(overdueFrame)]!;
    const elapsed = overdueAt - declaredAt;
    assert.ok(elapsed >= 5_000 && elapsed <= 7_000, `the overdue event came ${elapsed} ms after the declare (5 to 7 s)`);

    const declaredOffset = acking.ofType('emergency.declared')[0].offset;
    const overdue = overdueFrame.event;
    assert.equal(overdue.emergencyId, emergencyId);
    assert.equal(overdue.sequence, 2, "the emergency's next sequence");
    assert.equal(overdueFrame.offset, declaredOffset + 1);
    assert.deepEqual(
      { ...overdue.data, silentDevices: overdue.data.silentDevices.map((d: any) => ({ ...d, lastSeenAt: typeof d.lastSeenAt })) },
      {
        emergencyId,
        eventOffset: declaredOffset,
        eventType: 'emergency.declared',
        deadlineSeconds: 5,
        targeted: 2,
        acknowledged: 1,
        silentDevices: [{ deviceId: silentDevice.id, name: 'Silent station', online: true, lastSeenAt: 'string' }],
        silentDevicesTotal: 1,
        exercise: false,
      },
    );

    // Half-way to the deadline, the silent device got the declared frame again (same offset, same bytes); the acking one did not.
    const copies = silent.framesOf(declaredOffset);
    assert.equal(copies.length, 2, 'the silent device saw the declared offset twice');
    assert.deepEqual(copies[1]!.frame, copies[0]!.frame);
    assert.ok(copies[1]!.at < declaredAt + 5_000, `the re-send came before the deadline (${copies[1]!.at - declaredAt} ms)`);
    assert.equal(acking.framesOf(declaredOffset).length, 1, 'no re-send to a device that acknowledged');
    await silent.device.until(() => silent.ofType(OVERDUE).length === 1, 2_000, 'the overdue frame on the silent device');

    // Receipts: the declared event's deadline and overdue flag; the overdue event has no deadline of its own.
    const receipts = await org.api.get(`/orgs/${org.orgId}/emergencies/${emergencyId}/receipts`);
    assert.equal(receipts.status, 200);
    const [declaredReceipt, overdueReceipt] = receipts.body.events;
    assert.equal(declaredReceipt.deadlineAt, new Date(Date.parse(declaredReceipt.createdAt) + 5_000).toISOString());
    assert.equal(declaredReceipt.overdue, true);
    assert.equal(overdueReceipt.eventType, OVERDUE);
    assert.equal(overdueReceipt.deadlineAt, null);
    assert.equal(overdueReceipt.overdue, false);

    // The silent device acknowledges: one completed event follows.
    const ackedAt = Date.now();
    silent.ack(overdueFrame.offset);
    const completedFrame = await eventually('the completed event at the acking device', () => acking.ofType(COMPLETED)[0], 10_000, 10);
    const completed = completedFrame.event;
    assert.equal(completed.sequence, 3);
    assert.equal(completed.data.emergencyId, emergencyId);
    assert.equal(completed.data.eventOffset, declaredOffset);
    assert.equal(completed.data.eventType, 'emergency.declared');
    assert.equal(completed.data.targeted, 2);
    assert.ok(Number.isInteger(completed.data.completedAfterMs), 'completedAfterMs is an integer');
    assert.ok(
      completed.data.completedAfterMs >= ackedAt - overdueAt - 1_000 && completed.data.completedAfterMs <= Date.now() - declaredAt,
      `completedAfterMs ${completed.data.completedAfterMs} spans the overdue event to the ack`,
    );

    // Each came once: two more completion checks later, the feed holds one of each.
    await sleep(4_500);
    const overdueItems = (await feedOf(org, OVERDUE)).filter((i) => i.event.emergencyId === emergencyId);
    const completedItems = (await feedOf(org, COMPLETED)).filter((i) => i.event.emergencyId === emergencyId);
    assert.equal(overdueItems.length, 1);
    assert.equal(completedItems.length, 1);
    assert.equal(overdueItems[0].event.eventId, overdue.eventId);
    assert.equal((await org.api.get(`/orgs/${org.orgId}/emergencies/${emergencyId}/receipts`)).body.events[0].overdue, true, 'stays true after completion');
    const timeline = await org.api.get(`/orgs/${org.orgId}/emergencies/${emergencyId}/events`);
    assert.deepEqual(
      timeline.body.items.map((i: any) => [i.event.sequence, i.event.eventType]),
      [
        [1, 'emergency.declared'],
        [2, OVERDUE],
        [3, COMPLETED],
      ],
    );

    const metrics = await scrapeMetrics(server.url);
    assert.match(metrics, /emergency_delivery_overdue_total\{event_type="emergency.declared"\} [1-9]/);
    assert.match(metrics, /event_full_acknowledgement_seconds_count [1-9]/);
    await Promise.all([acking.device.close(), silent.device.close()]);
  });

  it('webhooks: subscriptions without a filter and those listing the type get delivery_overdue, a filter without it does not', async () => {
    const org = await deadlineOrg(server.ctx, server.url);
    const path = (name: string) => `/${org.orgId}/${name}`;
    const subscribe = async (name: string, eventTypes?: string[]) => {
      const res = await org.admin.post('/webhooks', {
        url: `${receiver.url}${path(name)}`,
        subject: { type: 'org', id: org.orgId },
        ...(eventTypes ? { eventTypes } : {}),
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.secret as string;
    };
    const secrets = {
      all: await subscribe('all'),
      declaredOnly: await subscribe('declared-only', ['emergency.declared']),
      overdueListed: await subscribe('overdue-listed', [OVERDUE]),
    };
    assert.equal((await org.admin.patch(`/orgs/${org.orgId}`, { ackDeadlineSeconds: 5 })).status, 200);
    await registerDevice(org, 'Never connected');
    const declared = await org.api.post(`/orgs/${org.orgId}/emergencies`, { description: 'webhook deadline test' });
    assert.equal(declared.status, 201);

    const typesAt = (name: keyof typeof secrets) =>
      receiver
        .forPath(path(name === 'declaredOnly' ? 'declared-only' : name === 'overdueListed' ? 'overdue-listed' : 'all'))
        .map((r) => verify(secrets[name], r).eventType);
    await eventually(
      'the overdue event at the unfiltered and the listing subscription',
      () => typesAt('all').includes(OVERDUE) && typesAt('overdueListed').includes(OVERDUE),
      15_000,
    );
    const overdue = receiver
      .forPath(path('all'))
      .map((r) => r.json)
      .find((e) => e.eventType === OVERDUE);
    assert.equal(overdue.emergencyId, declared.body.emergencyId);
    assert.deepEqual(
      overdue.data.silentDevices.map((d: any) => [d.name, d.online]),
      [['Never connected', false]],
    );
    assert.equal(overdue.data.silentDevicesTotal, 1);
    // The declared-only subscription has its declared event; give the overdue one time to (wrongly) arrive too.
    await eventually('the declared event at the filtered subscription', () => typesAt('declaredOnly').includes('emergency.declared'), 10_000);
    await sleep(2_000);
    assert.deepEqual(typesAt('declaredOnly'), ['emergency.declared']);
    assert.deepEqual(typesAt('overdueListed'), [OVERDUE]);
    assert.deepEqual(typesAt('all').sort(), ['emergency.declared', OVERDUE]);
  });

  it('no deadline set, or every device acknowledged in time: no follow-up events and no re-send', async () => {
    const off = await deadlineOrg(server.ctx, server.url);
    const silent = await watchDevice(server.wsUrl, (await registerDevice(off, 'Silent station')).token, false);
    const met = await deadlineOrg(server.ctx, server.url);
    assert.equal((await met.admin.patch(`/orgs/${met.orgId}`, { ackDeadlineSeconds: 5 })).status, 200);
    const acking = await watchDevice(server.wsUrl, (await registerDevice(met, 'Acking station')).token, true);
    const before = await scrapeMetrics(server.url);
    const inOff = await off.api.post(`/orgs/${off.orgId}/emergencies`, { description: 'no deadline' });
    const inMet = await met.api.post(`/orgs/${met.orgId}/emergencies`, { description: 'acknowledged in time' });
    assert.equal(inOff.status, 201);
    assert.equal(inMet.status, 201);
    // Past where a 5 s deadline fires, with a poll to spare.
    await sleep(7_000);
    for (const [org, device, emergencyId, deadline] of [
      [off, silent, inOff.body.emergencyId, false],
      [met, acking, inMet.body.emergencyId, true],
    ] as const) {
      assert.deepEqual(
        device.device.events.map((f) => f.event.eventType),
        ['emergency.declared'],
        'the declared event once, nothing after',
      );
      assert.deepEqual(await feedOf(org, `${OVERDUE},${COMPLETED}`), []);
      const [event] = (await org.api.get(`/orgs/${org.orgId}/emergencies/${emergencyId}/receipts`)).body.events;
      assert.equal(event.deadlineAt, deadline ? new Date(Date.parse(event.createdAt) + 5_000).toISOString() : null);
      assert.equal(event.overdue, false);
    }
    // The deadline that was met measured its time to full acknowledgement.
    const count = (text: string) => Number(/^event_full_acknowledgement_seconds_count (\d+)/m.exec(text)?.[1] ?? 0);
    assert.ok(count(await scrapeMetrics(server.url)) > count(before), 'a time to full acknowledgement was observed');
    await Promise.all([silent.device.close(), acking.device.close()]);
  });

  it("a category's deadline overrides the org's", async () => {
    const org = await deadlineOrg(server.ctx, server.url);
    assert.equal((await org.admin.patch(`/orgs/${org.orgId}`, { ackDeadlineSeconds: 60 })).status, 200);
    assert.equal((await org.admin.patch(`/orgs/${org.orgId}/categories/${org.categories.Fire}`, { ackDeadlineSeconds: 5 })).status, 200);
    await registerDevice(org, 'Never connected');
    const declaredAt = Date.now();
    const fire = await org.api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire' });
    // With an Idempotency-Key: its stored answer and the deadline commit with the declare.
    const medical = await org.api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Medical' }, { 'idempotency-key': `medical-${org.orgId}` });
    assert.equal(fire.status, 201);
    assert.equal(medical.status, 201);

    const [overdue] = await eventually('the Fire emergency overdue', () => feedOf(org, OVERDUE).then((items) => (items.length > 0 ? items : null)), 10_000);
    const elapsed = Date.parse(overdue.event.createdAt) - declaredAt;
    assert.ok(elapsed >= 5_000 && elapsed <= 7_000, `the overdue event was appended ${elapsed} ms after the declare (5 to 7 s)`);
    assert.equal(overdue.event.emergencyId, fire.body.emergencyId);
    assert.equal(overdue.event.data.deadlineSeconds, 5);
    await sleep(1_500);
    assert.equal((await feedOf(org, OVERDUE)).length, 1, "the Medical emergency keeps the org's 60 s");
    const receipts = await org.api.get(`/orgs/${org.orgId}/emergencies/${medical.body.emergencyId}/receipts`);
    const [event] = receipts.body.events;
    assert.equal(event.deadlineAt, new Date(Date.parse(event.createdAt) + 60_000).toISOString());
    assert.equal(event.overdue, false);

    // Re-categorizing and resolving are watched too, with the deadline of the category the emergency is in.
    assert.equal((await org.api.patch(`/orgs/${org.orgId}/emergencies/${medical.body.emergencyId}`, { categoryName: 'Fire' })).status, 200);
    assert.equal((await org.api.post(`/orgs/${org.orgId}/emergencies/${medical.body.emergencyId}/resolutions`, {})).status, 201);
    const later = (await org.api.get(`/orgs/${org.orgId}/emergencies/${medical.body.emergencyId}/receipts`)).body.events;
    assert.deepEqual(
      later.map((e: any) => [e.eventType, Date.parse(e.deadlineAt) - Date.parse(e.createdAt)]),
      [
        ['emergency.declared', 60_000],
        ['emergency.categorized', 5_000],
        ['emergency.resolved', 5_000],
      ],
    );
  });
});
