import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { connectDevice, type DeviceTestServer, startDeviceServer } from './support.js';

describe('device gateway fan-out: one live event to every device of an org', () => {
  let server: DeviceTestServer;
  before(async () => {
    server = await startDeviceServer();
  });
  after(() => server.close());

  it('delivers every event once and in order to every device of the org', async () => {
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const api = client(server.base, key);
    const devices = await Promise.all(
      Array.from({ length: 12 }, async (_, i) =>
        connectDevice(server.wsUrl, (await createDevice(server.ctx, operatorCaller(), org.orgId, { name: `station ${i}` })).token),
      ),
    );
    for (let i = 0; i < 25; i++) {
      const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { description: `drill ${i}` });
      assert.equal(declared.status, 201);
    }
    for (const d of devices) {
      await d.until(() => d.events.length >= 25, 5_000, '25 events');
      assert.deepEqual(
        d.offsets(),
        Array.from({ length: 25 }, (_, i) => i + 1),
      );
      assert.deepEqual(
        d.events.map((e) => e.event.data.emergency.description),
        Array.from({ length: 25 }, (_, i) => `drill ${i}`),
      );
    }
    await Promise.all(devices.map((d) => d.close()));
  });
});
