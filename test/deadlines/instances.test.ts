import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SEVERAL_INSTANCES, twoInstances } from '../devices/support.js';
import { client } from '../helpers/http.js';
import { deadlineOrg, eventually, feedOf, registerDevice, sleep, watchDevice } from './support.js';

const OVERDUE = 'emergency.delivery_overdue';

describe('acknowledgement deadlines on two instances of one PostgreSQL database', SEVERAL_INSTANCES, () => {
  const servers = twoInstances();

  it('each overdue event is appended once, and each instance re-sends to the silent devices connected to it', async () => {
    const { a, b } = servers;
    const org = await deadlineOrg(a.ctx, a.url);
    const onB = client(`${b.url}/api/public/v1`, org.key);
    assert.equal((await org.admin.patch(`/orgs/${org.orgId}`, { ackDeadlineSeconds: 5 })).status, 200);
    const ackingDevice = await registerDevice(org, 'Acking on A');
    const silentOnA = await registerDevice(org, 'Silent on A');
    const silentOnB = await registerDevice(org, 'Silent on B');
    const acking = await watchDevice(a.wsUrl, ackingDevice.token, true);
    const silentA = await watchDevice(a.wsUrl, silentOnA.token, false);
    const silentB = await watchDevice(b.wsUrl, silentOnB.token, false);

    // Declares on both instances: both workers find the same deadlines due and race for them.
    const emergencyIds: string[] = [];
    for (let i = 0; i < 6; i++) {
      const api = i % 2 === 0 ? org.api : onB;
      const res = await api.post(`/orgs/${org.orgId}/emergencies`, { description: `declared ${i}` });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      emergencyIds.push(res.body.emergencyId);
    }
    await eventually('an overdue event for every emergency', async () => (await feedOf(org, OVERDUE)).length >= emergencyIds.length, 15_000, 200);
    // Two more polls of both workers: nothing is appended twice.
    await sleep(2_500);
    const overdue = await feedOf(org, OVERDUE);
    assert.deepEqual(overdue.map((i) => i.event.emergencyId).sort(), [...emergencyIds].sort(), 'one overdue event per declared event');
    for (const item of overdue) {
      assert.deepEqual(
        item.event.data.silentDevices.map((d: any) => d.name),
        ['Silent on A', 'Silent on B'],
      );
      assert.equal(item.event.sequence, 2);
    }

    // Each silent device got each declared frame twice, from the instance it is connected to.
    for (const silent of [silentA, silentB]) {
      const offsets = new Set(silent.ofType('emergency.declared').map((f) => f.offset));
      assert.equal(offsets.size, emergencyIds.length);
      for (const offset of offsets) assert.equal(silent.framesOf(offset).length, 2, `offset ${offset} sent again`);
    }
    for (const declared of acking.ofType('emergency.declared')) assert.equal(acking.framesOf(declared.offset).length, 1);
    await Promise.all([acking.device.close(), silentA.device.close(), silentB.device.close()]);
  });
});
