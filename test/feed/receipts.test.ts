import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice, revokeDevice } from '../../src/domain/devices/service.js';
import { createSubscription } from '../../src/domain/webhooks/service.js';
import { startReceiver, type Receiver, waitFor } from '../delivery/helpers.js';
import { connectDevice, type TestDevice } from '../devices/support.js';
import { client } from '../helpers/http.js';
import { connectMcp } from '../helpers/mcp.js';
import { createOrgTree, mintKey, type OrgFixture, scrapeMetrics, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Receipts of one emergency: an acking device, a silent one, one created after the event, a revoked
 * one; a subscriber that succeeds and one that always fails.
 */
describe('delivery receipts', () => {
  let server: TestServer;
  let receiver: Receiver;
  let org: OrgFixture;
  let api: ReturnType<typeof client>;
  let key: string;
  let wsUrl: string;
  const devices: Record<string, { id: string; token: string }> = {};
  const sockets: TestDevice[] = [];

  before(async () => {
    server = await startTestServer(
      { WEBHOOK_RETRY_SCHEDULE: '0.1,0.1' },
      { dispatcher: { requestTimeoutMs: 1500, leaseMs: 3000, pollIntervalMs: 100 }, devices: { ackFlushMs: 50 } },
    );
    wsUrl = `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`;
    receiver = await startReceiver();
    receiver.respond('/broken', (_req, res) => {
      res.writeHead(500).end('down');
    });
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    api = client(server.base, key);
    for (const name of ['Acking', 'Silent', 'Revoked']) devices[name] = await createDevice(server.ctx, operatorCaller(), org.orgId, { name });
    await createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `${receiver.url}/ok` });
    await createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `${receiver.url}/broken` });
  });
  after(async () => {
    for (const s of sockets) await s.close();
    await server.close();
    await receiver.close();
  });

  it('counts targeted, acknowledged and pending devices and the webhook outcomes of each event', async () => {
    const acking = await connectDevice(wsUrl, devices.Acking!.token);
    const silent = await connectDevice(wsUrl, devices.Silent!.token);
    sockets.push(acking, silent);
    await revokeDevice(server.ctx, operatorCaller(), devices.Revoked!.id);

    const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'lockdown', categoryName: 'Fire' });
    assert.equal(declared.status, 201);
    const emergencyId = declared.body.emergencyId;
    await acking.until(() => acking.events.length === 1);
    await silent.until(() => silent.events.length === 1);
    const offset = acking.events[0]!.offset;
    acking.send({ type: 'ack', offset });
    // A device registered after the event was created is not expected to have it.
    devices.Later = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Later' });

    const receipts = await waitFor('the ack and both webhook outcomes', async () => {
      const res = await api.get(`/orgs/${org.orgId}/emergencies/${emergencyId}/receipts`);
      const event = res.body.events[0];
      return event.devices.acknowledged === 1 && event.webhooks.succeeded === 1 && event.webhooks.failed === 1 ? res : null;
    });
    assert.equal(receipts.status, 200);
    assert.equal(receipts.body.emergencyId, emergencyId);
    assert.equal(receipts.body.events.length, 1);
    const [event] = receipts.body.events;
    assert.equal(event.eventType, 'emergency.declared');
    assert.equal(event.sequence, 1);
    assert.equal(event.offset, offset);
    assert.equal(event.eventId, acking.events[0]!.event.eventId);
    assert.deepEqual(event.devices, {
      targeted: 2,
      acknowledged: 1,
      pending: [{ deviceId: devices.Silent!.id, name: 'Silent', online: true, ackedOffset: 0 }],
      nextCursor: null,
    });
    assert.deepEqual(event.webhooks, { targeted: 2, succeeded: 1, failed: 1, pending: 0 });

    const detailed = await api.get(`/orgs/${org.orgId}/emergencies/${emergencyId}/receipts?detail=devices`);
    const by = detailed.body.events[0].devices.acknowledgedBy;
    assert.equal(by.length, 1);
    assert.equal(by[0].deviceId, devices.Acking!.id);
    assert.equal(by[0].name, 'Acking');
    assert.ok(Date.parse(by[0].acknowledgedAt) >= Date.parse(event.createdAt));

    // A later event: the first ack time of the first one is kept when the device acks again.
    assert.equal((await api.post(`/orgs/${org.orgId}/emergencies/${emergencyId}/resolutions`, {})).status, 201);
    await acking.until(() => acking.events.length === 2);
    acking.send({ type: 'ack', offset: acking.events[1]!.offset });
    const both = await waitFor('the second ack', async () => {
      const res = await api.get(`/orgs/${org.orgId}/emergencies/${emergencyId}/receipts?detail=devices`);
      return res.body.events[1]?.devices.acknowledged === 1 ? res : null;
    });
    assert.equal(both.body.events[0].devices.acknowledgedBy[0].acknowledgedAt, by[0].acknowledgedAt);
    assert.ok(both.body.events[1].devices.acknowledgedBy[0].acknowledgedAt >= by[0].acknowledgedAt);
    // The device created before the resolution is targeted by it; the revoked one never counts.
    assert.equal(both.body.events[1].devices.targeted, 3);
    assert.deepEqual(both.body.events[1].devices.pending.map((d: { name: string }) => d.name).sort(), ['Later', 'Silent']);

    // The tool answers the same receipts.
    const mcp = await connectMcp(server.url, key);
    try {
      const viaTool = await mcp.ok('get_emergency_receipts', { orgId: org.orgId, emergencyId });
      const viaRest = await api.get(`/orgs/${org.orgId}/emergencies/${emergencyId}/receipts`);
      assert.deepEqual(viaTool, viaRest.body);
    } finally {
      await mcp.close();
    }
  });

  it('lists the devices by name with presence, acknowledged offset and lag', async () => {
    const res = await api.get(`/orgs/${org.orgId}/devices`);
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.items.map((d: { name: string }) => d.name),
      ['Acking', 'Later', 'Revoked', 'Silent'],
    );
    const lastOffset = (await api.get(`/orgs/${org.orgId}/events?limit=1`)).body.lastOffset;
    const byName = Object.fromEntries(res.body.items.map((d: { name: string }) => [d.name, d]));
    assert.equal(byName.Acking.ackedOffset, lastOffset);
    assert.equal(byName.Acking.lag, 0);
    assert.equal(byName.Acking.online, true);
    assert.equal(typeof byName.Acking.ackedAt, 'string');
    assert.equal(byName.Silent.lag, lastOffset);
    assert.equal(byName.Silent.ackedAt, null);
    assert.equal(byName.Revoked.status, 'revoked');
    assert.equal(byName.Later.online, false);
    assert.equal(byName.Later.connectedAt, null);
    assert.deepEqual(Object.keys(byName.Acking).sort(), ['ackedAt', 'ackedOffset', 'connectedAt', 'deviceId', 'lag', 'lastSeenAt', 'name', 'online', 'status']);

    const first = await api.get(`/orgs/${org.orgId}/devices?limit=3`);
    const second = await api.get(`/orgs/${org.orgId}/devices?limit=3&cursor=${first.body.nextCursor}`);
    assert.deepEqual(
      [...first.body.items, ...second.body.items].map((d: { deviceId: string }) => d.deviceId),
      res.body.items.map((d: { deviceId: string }) => d.deviceId),
    );
    assert.equal(second.body.nextCursor, null);
  });

  it('refuses other organizations (403) and unknown emergencies (404), and the detail parameter is checked', async () => {
    const other = await createOrgTree(server.ctx);
    const otherApi = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: other.orgId })).key);
    const foreign = await otherApi.post(`/orgs/${other.orgId}/emergencies`, { description: 'elsewhere' });
    assert.equal((await api.get(`/orgs/${other.orgId}/devices`)).body.detail.error, 'org_not_covered');
    assert.equal((await api.get(`/orgs/${other.orgId}/emergencies/${foreign.body.emergencyId}/receipts`)).status, 403);
    const crossed = await api.get(`/orgs/${org.orgId}/emergencies/${foreign.body.emergencyId}/receipts`);
    assert.equal(crossed.status, 404);
    assert.equal(crossed.body.detail.error, 'emergency_not_found');
    assert.equal((await api.get(`/orgs/${org.orgId}/emergencies/nope/receipts`)).status, 404);
    const bad = await api.get(`/orgs/${org.orgId}/emergencies/${foreign.body.emergencyId}/receipts?detail=everything`);
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['query', 'detail']);
  });

  it('exposes the ack lag and the unacknowledged devices of open emergencies as metrics', async () => {
    const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'still open' });
    const text = await waitFor('the gauges', async () => {
      const body = await scrapeMetrics(server.url);
      return body.includes(`emergency_id="${declared.body.emergencyId}"`) ? body : null;
    });
    const lag = new RegExp(`device_ack_lag_events\\{org_id="${org.orgId}"\\} (\\d+)`).exec(text);
    assert.ok(lag, 'device_ack_lag_events for the org');
    assert.ok(Number(lag[1]) >= 1);
    const pending = new RegExp(`emergency_unacknowledged_devices\\{org_id="${org.orgId}",emergency_id="${declared.body.emergencyId}"\\} (\\d+)`).exec(text);
    assert.ok(pending, 'emergency_unacknowledged_devices for the open emergency');
    // Acking, Silent and Later exist and are active; none has acknowledged this event yet.
    assert.equal(Number(pending[1]), 3);
  });
});
