import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { formatAlert } from '../../src/cli/device-simulator.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { type DeadlineOrg, deadlineOrg, eventually, feedOf, registerDevice, watchDevice, type WatchedDevice } from '../deadlines/support.js';
import { type Receiver, startReceiver, verify } from '../delivery/helpers.js';
import { type DeviceTestServer, startDeviceServer } from '../devices/support.js';
import { client } from '../helpers/http.js';
import { createOrgTree } from '../helpers/server.js';
import { completedRuns, runsOf, shortSchedule } from './support.js';

const COMPLETED = 'drill.completed';

describe('drills', () => {
  let server: DeviceTestServer;
  let receiver: Receiver;
  let org: DeadlineOrg;
  before(async () => {
    server = await startDeviceServer();
    receiver = await startReceiver();
    org = await deadlineOrg(server.ctx, server.url);
  });
  after(async () => {
    await receiver?.close();
    await server?.close();
  });

  it('runs each scheduled time once and reports acknowledgements, silent stations and webhooks exactly', async () => {
    const subscribed = await org.admin.post('/webhooks', { url: `${receiver.url}/${org.orgId}`, subject: { type: 'org', id: org.orgId } });
    assert.equal(subscribed.status, 201, JSON.stringify(subscribed.body));
    const secret = subscribed.body.secret as string;
    const acking = await registerDevice(org, 'A acking station');
    const silent = await registerDevice(org, 'B silent station');
    const offline = await registerDevice(org, 'C offline station');
    const devices: WatchedDevice[] = [await watchDevice(server.wsUrl, acking.token, true), await watchDevice(server.wsUrl, silent.token, false)];

    const { schedule, times } = shortSchedule(3, 12, 2);
    const created = await org.admin.post(
      `/orgs/${org.orgId}/drills`,
      { name: 'Siren test', description: 'This is a drill', schedule, ackDeadlineSeconds: 5, resolveAfterSeconds: 8 },
      { 'idempotency-key': 'create-siren-test' },
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const drill = created.body;
    assert.equal(drill.nextRunAt, times[0]);
    assert.equal(drill.resolveAfterSeconds, 8);
    assert.equal(drill.categoryId, null);

    const runs = await completedRuns(org, drill.drillId, 2);
    assert.equal(runs.length, 2, 'one run per occurrence');
    assert.deepEqual(runs.map((r) => r.scheduledFor).sort(), times);
    const acks = await server.ctx.db.db.selectFrom('device_acks').select(['device_id', 'to_offset', 'acked_at']).where('device_id', '=', acking.id).execute();
    for (const run of runs) {
      assert.equal(run.status, 'completed');
      assert.equal(run.targeted, 3);
      assert.equal(run.acknowledged, 1);
      assert.equal(run.passed, false);
      assert.equal(run.silentDevicesTotal, 2);
      assert.deepEqual(
        run.silentDevices.map((d: any) => [d.deviceId, d.name, d.online]),
        [
          [silent.id, 'B silent station', true],
          [offline.id, 'C offline station', false],
        ],
      );
      assert.equal(run.silentDevices[1].lastSeenAt, null);
      assert.deepEqual(run.webhooks, { delivered: 1, failed: 0, pending: 0 });
      // One station acknowledged: every percentile is its time, from the alert to its first acknowledgement covering it.
      const emergency = await org.api.get(`/orgs/${org.orgId}/emergencies/${run.emergencyId}`);
      const declared = (await feedOf(org, 'emergency.declared')).find((i) => i.event.emergencyId === run.emergencyId);
      const firstAck = acks.filter((a) => Number(a.to_offset) >= declared.offset).sort((a, b) => Number(a.to_offset) - Number(b.to_offset))[0]!;
      const ackMs = Date.parse(firstAck.acked_at) - Date.parse(declared.event.createdAt);
      assert.deepEqual(run.ackMs, { p50: ackMs, p95: ackMs, max: ackMs });
      // The exercise resolved itself, as the drill.
      assert.equal(emergency.body.status, 'resolved');
      assert.equal(emergency.body.exercise, true);
      assert.equal(emergency.body.externalId, `drill:${run.runId}`);
      assert.equal(emergency.body.source, 'drill');
      assert.equal(emergency.body.description, 'This is a drill');
      assert.deepEqual(emergency.body.declaredBy, { type: 'drill', id: drill.drillId, name: 'Siren test' });
      assert.deepEqual(emergency.body.resolvedBy, { type: 'drill', id: drill.drillId, name: 'Siren test' });
      assert.ok(Date.parse(run.completedAt) - Date.parse(run.startedAt) >= 8_000, 'resolved after resolveAfterSeconds');
    }

    // drill.completed: once per run, last on the exercise's timeline, in the feed and at the webhook, carrying the report.
    const feed = await feedOf(org, COMPLETED);
    assert.equal(feed.length, 2);
    for (const item of feed) {
      const run = runs.find((r) => r.emergencyId === item.event.emergencyId);
      assert.deepEqual(item.event.data, { ...run, exercise: true });
      const timeline = await org.api.get(`/orgs/${org.orgId}/emergencies/${run.emergencyId}/events`);
      assert.deepEqual(
        timeline.body.items.map((i: any) => i.event.eventType),
        ['emergency.declared', 'emergency.delivery_overdue', 'emergency.resolved', COMPLETED],
      );
    }
    const delivered = await eventually('drill.completed at the webhook', () => {
      const found = receiver
        .forPath(`/${org.orgId}`)
        .map((r) => verify(secret, r))
        .filter((e) => e.eventType === COMPLETED);
      return found.length === 2 ? found : null;
    });
    for (const event of delivered) assert.equal(event.data.exercise, true);
    // Base stations see it as an event of the exercise.
    await devices[0]!.device.until(() => devices[0]!.ofType(COMPLETED).length === 2, 5_000, 'drill.completed frames');
    // The reference device client prints it on one line, marked as an exercise.
    const frame = devices[0]!.ofType(COMPLETED)[0];
    const line = formatAlert(frame.offset, frame.event);
    assert.match(line, /#\d+ EXERCISE DRILL COMPLETED: failed, 1 of 3 acknowledged \| p95 \d+ ms, 2 silent \| emergency /);
    assert.doesNotMatch(line, /\n/);

    const drillAfter = await org.admin.get(`/orgs/${org.orgId}/drills/${drill.drillId}`);
    assert.equal(drillAfter.body.nextRunAt, null, 'COUNT=2: no occurrence left');
    const exercises = await org.api.get(`/orgs/${org.orgId}/emergencies?exercise=true`);
    assert.equal(exercises.body.items.length, 2);
    await Promise.all(devices.map((d) => d.device.close()));
  });

  it('runs a drill on demand, once at a time, and lists its runs newest first', async () => {
    const org = await deadlineOrg(server.ctx, server.url);
    const created = await org.admin.post(
      `/orgs/${org.orgId}/drills`,
      { name: 'On demand', categoryId: org.categories.Fire, ackDeadlineSeconds: 5, resolveAfterSeconds: 5 },
      { 'idempotency-key': 'create-on-demand' },
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.nextRunAt, null);
    const run = await org.admin.post(`/orgs/${org.orgId}/drills/${created.body.drillId}/runs`, undefined, { 'idempotency-key': 'run-1' });
    assert.equal(run.status, 202, JSON.stringify(run.body));
    assert.equal(run.body.status, 'starting');
    const replay = await org.admin.post(`/orgs/${org.orgId}/drills/${created.body.drillId}/runs`, undefined, { 'idempotency-key': 'run-1' });
    assert.deepEqual(replay.body, run.body);
    const busy = await org.admin.post(`/orgs/${org.orgId}/drills/${created.body.drillId}/runs`, undefined, { 'idempotency-key': 'run-2' });
    assert.equal(busy.status, 409);
    const [done] = await completedRuns(org, created.body.drillId, 1, 20_000);
    assert.equal(done.runId, run.body.runId);
    assert.equal(done.targeted, 0);
    assert.equal(done.passed, true);
    const emergency = await org.api.get(`/orgs/${org.orgId}/emergencies/${done.emergencyId}`);
    assert.equal(emergency.body.category.id, org.categories.Fire);
    const second = await org.admin.post(`/orgs/${org.orgId}/drills/${created.body.drillId}/runs`, undefined, { 'idempotency-key': 'run-3' });
    assert.equal(second.status, 202);
    const runs = await runsOf(org, created.body.drillId);
    assert.deepEqual(
      runs.map((r) => r.runId),
      [second.body.runId, run.body.runId],
    );
    const removed = await org.admin.call('DELETE', `/orgs/${org.orgId}/drills/${created.body.drillId}`);
    assert.deepEqual(removed.body, { drillId: created.body.drillId, deleted: true });
    assert.equal((await org.admin.get(`/orgs/${org.orgId}/drills/${created.body.drillId}`)).status, 404);
    // The run under way at the delete still completes.
    await eventually(
      'the run under way completed',
      async () =>
        (await server.ctx.db.db.selectFrom('drill_runs').select('status').where('id', '=', second.body.runId).executeTakeFirst())?.status === 'completed',
      20_000,
      250,
    );
  });

  it('refuses bad schedules and settings with 422 on the field', async () => {
    const create = (body: Record<string, unknown>) => org.admin.post(`/orgs/${org.orgId}/drills`, { name: 'Bad', ackDeadlineSeconds: 30, ...body });
    const refusedAt = async (body: Record<string, unknown>, field: string, pattern: RegExp) => {
      const res = await create(body);
      assert.equal(res.status, 422, JSON.stringify(res.body));
      const issue = res.body.detail.find((d: any) => d.loc.join('.') === `body.${field}`);
      assert.ok(issue, `an issue at ${field}: ${JSON.stringify(res.body)}`);
      assert.match(issue.msg, pattern);
    };
    await refusedAt({ schedule: 'EVERY MONDAY' }, 'schedule', /RRULE/);
    await refusedAt({ schedule: 'FREQ=FORTNIGHTLY' }, 'schedule', /RRULE/);
    await refusedAt({ schedule: 'FREQ=DAILY;UNTIL=20200101T000000Z' }, 'schedule', /no occurrence/);
    await refusedAt({ schedule: 'FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=31' }, 'schedule', /too long|no occurrence/);
    await refusedAt({ schedule: 'FREQ=DAILY;BYHOUR=25' }, 'schedule', /BYHOUR/);
    await refusedAt({ schedule: 'FREQ=MINUTELY;INTERVAL=1;COUNT=5', resolveAfterSeconds: 90 }, 'schedule', /less than a run lasts/);
    await refusedAt({ schedule: 'FREQ=SECONDLY;INTERVAL=10' }, 'schedule', /COUNT/);
    await refusedAt({ schedule: 'FREQ=HOURLY;BYDAY=MO' }, 'schedule', /cannot select days/);
    await refusedAt({ ackDeadlineSeconds: 4 }, 'ackDeadlineSeconds', /5 to 3600/);
    await refusedAt({ ackDeadlineSeconds: 3601 }, 'ackDeadlineSeconds', /5 to 3600/);
    await refusedAt({ resolveAfterSeconds: 10 }, 'resolveAfterSeconds', /at least ackDeadlineSeconds/);
    await refusedAt({ categoryId: '0195f3a8-0000-7000-8000-00000000dead' }, 'categoryId', /./);
    // A monthly rule with its own DTSTART and time zone is fine.
    const monthly = await create({ schedule: 'DTSTART;TZID=Europe/Berlin:20260105T100000\nRRULE:FREQ=MONTHLY;BYDAY=1MO' });
    assert.equal(monthly.status, 201, JSON.stringify(monthly.body));
    assert.match(monthly.body.nextRunAt, /^\d{4}-\d{2}-0[1-7]T0[89]:00:00\.000Z$/);
    const patched = await org.admin.patch(`/orgs/${org.orgId}/drills/${monthly.body.drillId}`, { schedule: 'FREQ=SECONDLY;INTERVAL=2;COUNT=9' });
    assert.equal(patched.status, 422);
    const cleared = await org.admin.patch(`/orgs/${org.orgId}/drills/${monthly.body.drillId}`, { schedule: null, name: 'Renamed' });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.nextRunAt, null);
    assert.equal(cleared.body.name, 'Renamed');
  });

  it("answers another tenant's org as an unknown one", async () => {
    const other = await createOrgTree(server.ctx);
    const partnerKey = (await createAdminKey(server.ctx, operatorCaller(), { name: 'partner', subject: { type: 'partner', id: org.partnerId } })).key;
    const partner = client(`${server.url}/api/admin/v1`, partnerKey);
    const body = { name: 'Not mine', ackDeadlineSeconds: 30 };
    const foreign = await partner.post(`/orgs/${other.orgId}/drills`, body);
    const unknown = await partner.post('/orgs/0195f3a8-0000-7000-8000-00000000beef/drills', body);
    assert.equal(foreign.status, 404);
    assert.equal(unknown.status, 404);
    assert.equal(foreign.body.code, unknown.body.code);
    assert.equal((await partner.get(`/orgs/${other.orgId}/drills`)).status, 404);
    const own = await partner.post(`/orgs/${org.orgId}/drills`, body);
    assert.equal(own.status, 201);
    const ownDrill = `/orgs/${org.orgId}/drills/${own.body.drillId}`;
    assert.equal((await partner.get(ownDrill)).status, 200);
    assert.equal((await partner.get(`/orgs/${other.orgId}/drills/${own.body.drillId}`)).status, 404);
    const listed = await partner.get(`/orgs/${org.orgId}/drills?limit=100`);
    assert.ok(listed.body.items.some((d: any) => d.drillId === own.body.drillId));
  });
});
