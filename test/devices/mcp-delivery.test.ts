import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { connectMcp } from '../helpers/mcp.js';
import { createOrgTree, mintKey, scrapeMetrics } from '../helpers/server.js';
import { connectDevice, type DeviceTestServer, startDeviceServer } from './support.js';

describe('device delivery of tool-server writes', () => {
  let server: DeviceTestServer;
  before(async () => {
    server = await startDeviceServer();
  });
  after(() => server.close());

  it('pushes create/update/resolve made through MCP to the org devices within a second, and counts them in /metrics', async () => {
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const device = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Front desk' });
    const ws = await connectDevice(server.wsUrl, device.token);
    const mcp = await connectMcp(server.url, key);
    try {
      const created = await mcp.client.callTool({ name: 'create_emergency', arguments: { orgId: org.orgId, categoryName: 'Fire' } });
      assert.ok(!created.isError, JSON.stringify(created));
      const id = (created.structuredContent as { emergencyId: string }).emergencyId;
      await ws.until(() => ws.events.some((e) => e.event.emergencyId === id), 1_000, 'declared frame within 1 s');
      await mcp.client.callTool({ name: 'update_emergency', arguments: { orgId: org.orgId, emergencyId: id, categoryName: 'Medical' } });
      await mcp.client.callTool({ name: 'resolve_emergency', arguments: { orgId: org.orgId, emergencyId: id } });
      await ws.until(() => ws.events.length === 3, 2_000, 'three frames');
      assert.deepEqual(
        ws.events.map((e) => [e.event.eventType, e.event.sequence]),
        [
          ['emergency.declared', 1],
          ['emergency.categorized', 2],
          ['emergency.resolved', 3],
        ],
      );
      const metrics = await scrapeMetrics(server.url);
      assert.match(metrics, /^devices_connected 1$/m);
      assert.match(metrics, /^device_event_latency_seconds_count 3$/m);
    } finally {
      await mcp.close();
      await ws.close();
    }
  });
});
