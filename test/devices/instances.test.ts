import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { connectDevice, SEVERAL_INSTANCES, twoInstances } from './support.js';

describe('several server instances on one PostgreSQL database', SEVERAL_INSTANCES, () => {
  const servers = twoInstances({ eventLog: { pollIntervalMs: 60_000 } });

  it('delivers to a device on instance B the events written on instance A, live and on resume', async () => {
    const { a, b } = servers;
    const org = await createOrgTree(a.ctx);
    const { key } = await mintKey(a.ctx, { subjectType: 'org', subjectId: org.orgId });
    const onA = client(a.base, key);
    const onB = client(b.base, key);
    const deviceB = await createDevice(a.ctx, operatorCaller(), org.orgId, { name: 'on B' });
    const deviceA = await createDevice(a.ctx, operatorCaller(), org.orgId, { name: 'on A' });
    const wsB = await connectDevice(b.wsUrl, deviceB.token);
    const wsA = await connectDevice(a.wsUrl, deviceA.token);

    const first = await onA.post(`/orgs/${org.orgId}/emergencies`, { description: 'written on A' });
    assert.equal(first.status, 201);
    await wsB.until(() => wsB.events.length === 1, 1_000, 'the event from A on B within 1 s');
    assert.equal(wsB.events[0]!.event.emergencyId, first.body.emergencyId);

    const second = await onB.post(`/orgs/${org.orgId}/emergencies`, { description: 'written on B' });
    await wsA.until(() => wsA.events.length === 2, 1_000, 'both events on A');
    assert.deepEqual(
      wsA.events.map((e) => e.event.emergencyId),
      [first.body.emergencyId, second.body.emergencyId],
    );
    await wsB.until(() => wsB.events.length === 2);

    // B's device goes away; A writes; it resumes on B and gets exactly what it missed.
    await wsB.close();
    const missed = [];
    for (let i = 0; i < 3; i++) missed.push((await onA.post(`/orgs/${org.orgId}/emergencies`, { description: `missed ${i}` })).body.emergencyId);
    const resumed = await connectDevice(b.wsUrl, deviceB.token, { after: 2 });
    await resumed.until(() => resumed.events.length === 3, 2_000, 'the missed events');
    assert.deepEqual(resumed.offsets(), [3, 4, 5]);
    assert.deepEqual(
      resumed.events.map((e) => e.event.emergencyId),
      missed,
    );
    await Promise.all([resumed.close(), wsA.close()]);
  });
});
