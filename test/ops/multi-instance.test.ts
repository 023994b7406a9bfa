import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { createSubscription } from '../../src/domain/webhooks/service.js';
import { type Receiver, startReceiver, verify } from '../delivery/helpers.js';
import { connectDevice, type DeviceTestServer, startDeviceServer, type TestDevice } from '../devices/support.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture } from '../helpers/server.js';
import { onPostgres } from '../helpers/db.js';

/**
 * Three instances on one PostgreSQL database, as behind a round-robin load balancer: declares go to
 * every instance in turn, devices sit on every instance, and one webhook subscriber covers both orgs.
 */
describe('three instances on one PostgreSQL database', {
  skip: onPostgres ? false : 'several instances share a database only on PostgreSQL (CI runs this suite there)',
}, () => {
  const instances: DeviceTestServer[] = [];
  let receiver: Receiver;
  let secret = '';
  const orgs: { fixture: OrgFixture; key: string; devices: TestDevice[] }[] = [];

  before(async () => {
    instances.push(await startDeviceServer());
    for (let i = 0; i < 2; i++) instances.push(await startDeviceServer({ databaseUrl: instances[0]!.databaseUrl }));
    const ctx = instances[0]!.ctx;
    receiver = await startReceiver();
    const first = await createOrgTree(ctx);
    const second = await createOrgTree(ctx, { partnerId: first.partnerId, enterpriseId: first.enterpriseId });
    secret = (await createSubscription(ctx, operatorCaller(), { subjectType: 'enterprise', subjectId: first.enterpriseId, url: `${receiver.url}/hook` }))
      .secret;
    for (const fixture of [first, second]) {
      const key = (await mintKey(ctx, { subjectType: 'org', subjectId: fixture.orgId })).key;
      const devices: TestDevice[] = [];
      for (const instance of instances) {
        const device = await createDevice(ctx, operatorCaller(), fixture.orgId, { name: `Base station on ${instance.url}` });
        devices.push(await connectDevice(instance.wsUrl, device.token));
      }
      orgs.push({ fixture, key, devices });
    }
  });

  after(async () => {
    for (const org of orgs) for (const d of org.devices) await d.close();
    await receiver?.close();
    for (const instance of instances.slice(1).reverse()) await instance.stop();
    await instances[0]?.close();
  });

  it('delivers every event of an org to each of its devices once and in order, and each webhook event', async () => {
    const perOrg = 30;
    const declared: string[][] = [[], []];
    let turn = 0;
    const writes: Promise<void>[] = [];
    for (let i = 0; i < perOrg; i++) {
      for (const [o, org] of orgs.entries()) {
        const instance = instances[turn++ % instances.length]!;
        writes.push(
          (async () => {
            const api = client(instance.base, org.key);
            const res = await api.post(`/orgs/${org.fixture.orgId}/emergencies`, { externalId: `multi-${i}` });
            assert.equal(res.status, 201);
            declared[o]!.push(res.body.emergencyId);
            if (i % 3 === 0) {
              const next = instances[turn++ % instances.length]!;
              const patched = await client(next.base, org.key).patch(`/orgs/${org.fixture.orgId}/emergencies/${res.body.emergencyId}`, {
                categoryName: 'Fire',
              });
              assert.equal(patched.status, 200);
            }
          })(),
        );
      }
    }
    await Promise.all(writes);
    const expectedPerOrg = perOrg + Math.ceil(perOrg / 3);

    for (const [o, org] of orgs.entries()) {
      for (const device of org.devices) {
        await device.until(() => device.events.length >= expectedPerOrg, 15_000, `all ${expectedPerOrg} events of org ${o}`);
        const offsets = device.offsets();
        assert.deepEqual(
          offsets,
          Array.from({ length: expectedPerOrg }, (_, i) => i + 1),
          'each offset once, in order',
        );
        assert.ok(
          device.events.every((e) => e.event.orgId === org.fixture.orgId),
          'only its own org',
        );
        const seqByEmergency = new Map<string, number[]>();
        for (const e of device.events) seqByEmergency.set(e.event.emergencyId, [...(seqByEmergency.get(e.event.emergencyId) ?? []), e.event.sequence]);
        for (const seqs of seqByEmergency.values())
          assert.deepEqual(
            seqs,
            seqs.map((_, i) => i + 1),
          );
        assert.equal(seqByEmergency.size, perOrg);
      }
    }

    const totalEvents = expectedPerOrg * 2;
    const deadline = Date.now() + 30_000;
    let eventIds = new Set<string>();
    while (Date.now() < deadline) {
      eventIds = new Set(receiver.forPath('/hook').map((req) => verify(secret, req).eventId as string));
      if (eventIds.size >= totalEvents) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(eventIds.size, totalEvents, 'every event delivered');
    const stored = await instances[0]!.ctx.db.db
      .selectFrom('events')
      .select('id')
      .where(
        'org_id',
        'in',
        orgs.map((o) => o.fixture.orgId),
      )
      .execute();
    assert.deepEqual([...eventIds].sort(), stored.map((r) => r.id).sort());
    // In the normal path (no crash, no timeout) each event is sent once even with three dispatchers.
    assert.equal(receiver.forPath('/hook').length, totalEvents, 'no duplicate deliveries in the normal path');
  });
});
