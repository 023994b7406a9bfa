import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import type { CommittedEvent } from '../../src/log/follow.js';
import type { DeviceFrameWritten } from '../../src/observability/trace-channels.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { connectDevice, type DeviceTestServer, startDeviceServer } from './support.js';

describe('diagnostics channels of the alert path', () => {
  let server: DeviceTestServer;
  before(async () => {
    server = await startDeviceServer();
  });
  after(() => server.close());

  it('publishes each commit of events, then each frame written to the org’s devices, in that order', async () => {
    const org = await createOrgTree(server.ctx);
    const other = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const api = client(server.base, key);
    const devices = await Promise.all(
      ['North', 'South'].map(async (name) => connectDevice(server.wsUrl, (await createDevice(server.ctx, operatorCaller(), org.orgId, { name })).token)),
    );
    const seen: string[] = [];
    const onCommitted = (message: unknown) => {
      const event = message as CommittedEvent;
      if (event.orgId === org.orgId) seen.push(`committed ${event.offset}`);
    };
    const onWritten = (message: unknown) => {
      const frame = message as DeviceFrameWritten;
      seen.push(`written ${frame.orgId === org.orgId ? 'own' : 'other'} ${frame.offset} to ${frame.sockets}`);
    };
    subscribe('emergency-api.events.committed', onCommitted);
    subscribe('emergency-api.device.frame-written', onWritten);
    try {
      const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire', location: { floorId: '1' } });
      assert.equal(declared.status, 201);
      await api.post(`/orgs/${org.orgId}/emergencies/${declared.body.emergencyId}/resolutions`, {});
      // An org without devices: committed, but no frame is written for it.
      const otherKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: other.orgId })).key;
      assert.equal((await client(server.base, otherKey).post(`/orgs/${other.orgId}/emergencies`, { categoryName: 'Fire' })).status, 201);
      for (const device of devices) await device.until(() => device.events.length === 2, 2_000, 'both frames');
      assert.deepEqual(seen, ['committed 1', 'written own 1 to 2', 'committed 2', 'written own 2 to 2']);
    } finally {
      unsubscribe('emergency-api.events.committed', onCommitted);
      unsubscribe('emergency-api.device.frame-written', onWritten);
      for (const device of devices) await device.close();
    }
  });
});
