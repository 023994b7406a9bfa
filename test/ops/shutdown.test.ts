import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { connectDevice, startDeviceServer } from '../devices/support.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';

describe('graceful shutdown', () => {
  it('finishes in-flight requests, closes device sockets with a reconnect hint, then stops accepting', async () => {
    const server = await startDeviceServer();
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const device = await connectDevice(server.wsUrl, (await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Lobby' })).token);
    const api = client(server.base, key);
    const inFlight = Array.from({ length: 10 }, (_, i) => api.post(`/orgs/${org.orgId}/emergencies`, { externalId: `shutdown-${i}` }));
    await new Promise((r) => setImmediate(r));
    const started = Date.now();
    const stopping = server.stop();
    const results = await Promise.allSettled(inFlight);
    await stopping;
    assert.ok(Date.now() - started < 10_000, 'bounded');
    const statuses = results.map((r) => (r.status === 'fulfilled' ? r.value.status : 'connection closed'));
    // A request that reached the server completes; one that arrives after close started is refused, never half-done.
    assert.ok(
      statuses.every((s) => s === 201 || s === 503 || s === 'connection closed'),
      JSON.stringify(statuses),
    );
    await device.closed;
    assert.equal(device.closeCode, 1001);
    assert.match(device.closeReason, /reconnect/);
    await assert.rejects(fetch(`${server.url}/healthz`));
    await server.close();
  });
});
