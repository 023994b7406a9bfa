import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { CAP_INGEST_EXAMPLE } from '../../src/http/routes/cap-examples.js';
import { startPrismProxy, type PrismProxy } from '../helpers/prism.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Tour } from './tour.js';

type Doc = any;

/** A 1×1 PNG: the smallest inline attachment the service stores. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** A webhook subscriber on loopback that answers 200 and keeps what it received. */
async function startReceiver(): Promise<{ url: string; bodies: unknown[]; server: Server }> {
  const bodies: unknown[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8').on('data', (d: string) => (text += d));
    req.on('end', () => {
      bodies.push(JSON.parse(text));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, bodies, server };
}

/**
 * Every operation of both OpenAPI documents, called through Stoplight Prism as a validating proxy: an
 * answer the document does not describe (status, headers, media type, body) fails the test, and so does an
 * operation of the document that no step calls.
 */
describe('the OpenAPI documents describe what the service answers (Prism validating proxy)', () => {
  let server: TestServer;
  let dir: string;
  let publicDoc: Doc;
  let adminDoc: Doc;
  let publicProxy: PrismProxy;
  let adminProxy: PrismProxy;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let adminKey: string;
  /** An integration key minted in the admin tour, for PagerDuty's route in the public one. */
  let routingKey = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prism-tour-'));
    server = await startTestServer({ ATTACHMENT_STORE: `file:${join(dir, 'attachments')}` });
    receiver = await startReceiver();
    adminKey = (await createAdminKey(server.ctx, operatorCaller(), { name: 'tour', subject: { type: 'instance' } })).key;
    publicDoc = await (await fetch(`${server.url}/api/public/v1/openapi.json`)).json();
    adminDoc = await (await fetch(`${server.url}/api/admin/v1/openapi.json`)).json();
    await writeFile(join(dir, 'public.json'), JSON.stringify(publicDoc));
    await writeFile(join(dir, 'admin.json'), JSON.stringify(adminDoc));
    [publicProxy, adminProxy] = await Promise.all([
      startPrismProxy(join(dir, 'public.json'), `${server.url}/api/public/v1`),
      startPrismProxy(join(dir, 'admin.json'), `${server.url}/api/admin/v1`),
    ]);
  });

  after(async () => {
    await Promise.all([publicProxy?.stop(), adminProxy?.stop()]);
    await new Promise((r) => receiver?.server.close(r));
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('calls every operation of both documents and every answer is as described', async () => {
    const admin = new Tour(adminProxy, adminKey);
    const unknown = randomUUID();

    // --- Admin API: a tenant tree, its settings, keys, webhooks and devices.
    await admin.call('GET', '/openapi.json', { key: null, expect: 200 });
    await admin.call('GET', '/me', { expect: 200 });
    await admin.call('GET', '/partners', { key: 'enk_adm_0000000000000000000000000000000000000000000000000000000000000000000000', expect: 401 });
    const partnerId = (await admin.call('POST', '/partners', { body: { name: 'Tour partner' }, expect: 201 })).json.partnerId;
    await admin.call('GET', '/partners', { expect: 200 });
    const enterpriseId = (
      await admin.call('POST', '/partners/{partner_id}/enterprises', { params: { partner_id: partnerId }, body: { name: 'Tour enterprise' }, expect: 201 })
    ).json.enterpriseId;
    await admin.call('GET', '/partners/{partner_id}/enterprises', { params: { partner_id: partnerId }, expect: 200 });
    const orgId = (
      await admin.call('POST', '/enterprises/{enterprise_id}/orgs', { params: { enterprise_id: enterpriseId }, body: { name: 'Tour org' }, expect: 201 })
    ).json.orgId;
    await admin.call('GET', '/enterprises/{enterprise_id}/orgs', { params: { enterprise_id: enterpriseId }, expect: 200 });
    await admin.call('GET', '/orgs/{org_id}', { params: { org_id: orgId }, expect: 200 });
    await admin.call('GET', '/orgs/{org_id}', { params: { org_id: unknown }, expect: 404 });
    await admin.call('PATCH', '/orgs/{org_id}', { params: { org_id: orgId }, body: { ackDeadlineSeconds: 120 }, expect: 200 });
    await admin.call('GET', '/orgs/{org_id}/connection-quotas', { params: { org_id: orgId }, expect: 200 });
    await admin.call('PATCH', '/orgs/{org_id}/connection-quotas', { params: { org_id: orgId }, body: { streams: 5 }, expect: 200 });
    await admin.call('GET', '/partners/{partner_id}/connection-quotas', { params: { partner_id: partnerId }, expect: 200 });
    await admin.call('PATCH', '/partners/{partner_id}/connection-quotas', { params: { partner_id: partnerId }, body: { devices: 1000 }, expect: 200 });
    const category = { name: 'Fire', color: '#D32F2F', severity: 5, responseLevel: 'evacuate' };
    const fireId = (await admin.call('POST', '/orgs/{org_id}/categories', { params: { org_id: orgId }, body: category, expect: 201 })).json.categoryId;
    await admin.call('POST', '/orgs/{org_id}/categories', { params: { org_id: orgId }, body: category, expect: 409 });
    await admin.call('PATCH', '/orgs/{org_id}/categories/{category_id}', {
      params: { org_id: orgId, category_id: fireId },
      body: { severity: 4 },
      expect: 200,
    });
    const mappingId = (
      await admin.call('POST', '/orgs/{org_id}/cap-mappings', { params: { org_id: orgId }, body: { event: 'Wildfire', categoryName: 'Fire' }, expect: 201 })
    ).json.mappingId;
    await admin.call('GET', '/orgs/{org_id}/cap-mappings', { params: { org_id: orgId }, expect: 200 });
    await admin.call('DELETE', '/orgs/{org_id}/cap-mappings/{mapping_id}', { params: { org_id: orgId, mapping_id: mappingId }, expect: 200 });
    const drillBody = { name: 'Tour drill', ackDeadlineSeconds: 5, resolveAfterSeconds: 5, schedule: 'FREQ=MONTHLY;BYDAY=1MO;BYHOUR=10;BYMINUTE=0;BYSECOND=0' };
    const drillId = (await admin.call('POST', '/orgs/{org_id}/drills', { params: { org_id: orgId }, body: drillBody, expect: 201 })).json.drillId;
    await admin.call('POST', '/orgs/{org_id}/drills', { params: { org_id: orgId }, body: { ...drillBody, schedule: 'FREQ=NEVER' }, expect: 422 });
    await admin.call('GET', '/orgs/{org_id}/drills', { params: { org_id: orgId }, expect: 200 });
    const drillOf = { org_id: orgId, drill_id: drillId };
    await admin.call('GET', '/orgs/{org_id}/drills/{drill_id}', { params: drillOf, expect: 200 });
    await admin.call('GET', '/orgs/{org_id}/drills/{drill_id}', { params: { org_id: orgId, drill_id: unknown }, expect: 404 });
    await admin.call('PATCH', '/orgs/{org_id}/drills/{drill_id}', { params: drillOf, body: { description: 'This is a drill' }, expect: 200 });
    await admin.call('POST', '/orgs/{org_id}/drills/{drill_id}/runs', { params: drillOf, expect: 202 });
    await admin.call('POST', '/orgs/{org_id}/drills/{drill_id}/runs', { params: drillOf, expect: 409 });
    await admin.call('GET', '/orgs/{org_id}/drills/{drill_id}/runs', { params: drillOf, expect: 200 });
    await admin.call('DELETE', '/orgs/{org_id}/drills/{drill_id}', { params: drillOf, expect: 200 });
    const integrationKey = (
      await admin.call('POST', '/orgs/{org_id}/integration-keys', { params: { org_id: orgId }, body: { name: 'Tour monitoring' }, expect: 201 })
    ).json;
    routingKey = integrationKey.key;
    await admin.call('GET', '/orgs/{org_id}/integration-keys', { params: { org_id: orgId }, expect: 200 });
    const mappingOf = { org_id: orgId, integration: 'pagerduty' };
    await admin.call('GET', '/orgs/{org_id}/integrations/{integration}/category-mapping', { params: mappingOf, expect: 200 });
    await admin.call('PATCH', '/orgs/{org_id}/integrations/{integration}/category-mapping', {
      params: mappingOf,
      body: { categoryMap: { critical: 'Fire' } },
      expect: 200,
    });
    await admin.call('PATCH', '/orgs/{org_id}/integrations/{integration}/category-mapping', {
      params: mappingOf,
      body: { categoryMap: { critical: 'No such category' } },
      expect: 422,
    });
    const spareKey = (await admin.call('POST', '/orgs/{org_id}/integration-keys', { params: { org_id: orgId }, body: { name: 'spare' }, expect: 201 })).json;
    await admin.call('POST', '/orgs/{org_id}/integration-keys/{key_id}/revoke', { params: { org_id: orgId, key_id: spareKey.id }, expect: 200 });
    const user = { firstName: 'Ada', lastName: 'Tour', email: 'ada.tour@example.test' };
    const userId = (await admin.call('POST', '/orgs/{org_id}/users', { params: { org_id: orgId }, body: user, expect: 201 })).json.userId;
    await admin.call('PATCH', '/orgs/{org_id}/users/{user_id}', { params: { org_id: orgId, user_id: userId }, body: { lastName: 'Touring' }, expect: 200 });
    const keySpec = { name: 'tour key', subject: { type: 'org', id: orgId }, permissions: ['read', 'write'] };
    // An org the subject does not hold: only the service can tell (422 org_outside_subject).
    await admin.call('POST', '/api-keys', { body: { ...keySpec, allowedOrgIds: [unknown] }, expect: 422 });
    const firstKey = (await admin.call('POST', '/api-keys', { body: keySpec, expect: 201 })).json;
    await admin.call('GET', '/api-keys', { expect: 200 });
    await admin.call('GET', '/api-keys/{id}', { params: { id: firstKey.apiKeyId }, expect: 200 });
    // The body of a rotation is optional: none, and an empty object.
    const rotated = (await admin.call('POST', '/api-keys/{id}/rotate', { params: { id: firstKey.apiKeyId }, expect: 201 })).json;
    const apiKey = (await admin.call('POST', '/api-keys/{id}/rotate', { params: { id: rotated.apiKeyId }, body: {}, expect: 201 })).json.key as string;
    await admin.call('POST', '/api-keys/{id}/revoke', { params: { id: firstKey.apiKeyId }, expect: 200 });
    const otherAdmin = (
      await admin.call('POST', '/admin-keys', { body: { name: 'tour partner key', subject: { type: 'partner', id: partnerId } }, expect: 201 })
    ).json;
    await admin.call('GET', '/admin-keys', { expect: 200 });
    await admin.call('POST', '/admin-keys/{id}/revoke', { params: { id: otherAdmin.adminKeyId }, expect: 200 });

    const hook = (await admin.call('POST', '/webhooks', { body: { url: receiver.url, subject: { type: 'org', id: orgId } }, expect: 201 })).json;
    await admin.call('GET', '/webhooks', { expect: 200 });
    await admin.call('GET', '/webhooks/{id}', { params: { id: hook.webhookId }, expect: 200 });
    await admin.call('GET', '/webhooks/{id}', { params: { id: unknown }, expect: 404 });
    await admin.call('PATCH', '/webhooks/{id}', {
      params: { id: hook.webhookId },
      body: { eventTypes: ['emergency.declared', 'emergency.resolved'] },
      expect: 200,
    });
    await admin.call('POST', '/webhooks/{id}/disable', { params: { id: hook.webhookId }, expect: 200 });
    await admin.call('POST', '/webhooks/{id}/enable', { params: { id: hook.webhookId }, expect: 200 });
    await admin.call('POST', '/webhooks/{id}/rotate-secret', { params: { id: hook.webhookId }, expect: 200 });
    await admin.call('POST', '/webhooks/{id}/test', { params: { id: hook.webhookId }, expect: 200 });
    await admin.call('POST', '/webhooks/{id}/replay', { params: { id: hook.webhookId }, body: { since: '2020-01-01T00:00:00Z' }, expect: 200 });
    await admin.call('GET', '/webhooks/{id}/deliveries', { params: { id: hook.webhookId }, expect: 200 });

    const device = (await admin.call('POST', '/orgs/{org_id}/devices', { params: { org_id: orgId }, body: { name: 'Gym base station' }, expect: 201 })).json;
    await admin.call('GET', '/orgs/{org_id}/devices', { params: { org_id: orgId }, expect: 200 });
    await admin.call('POST', '/devices/{device_id}/rotate-token', { params: { device_id: device.deviceId }, expect: 200 });

    // --- Public API, with the rotated key of the org.
    const api = new Tour(publicProxy, apiKey);
    const org = { org_id: orgId };
    await api.call('GET', '/openapi.json', { key: null, expect: 200 });
    await api.call('GET', '/me', { expect: 200 });
    await api.call('GET', '/me', { key: 'enk_live_00000000000000000000000000000000000000000000000000000000000000000000000', expect: 401 });
    await api.call('GET', '/orgs', { expect: 200 });
    await api.call('GET', '/orgs/{org_id}/emergencies/categories', { params: org, expect: 200 });
    await api.call('GET', '/orgs/{org_id}/users', { params: org, expect: 200 });
    await api.call('GET', '/orgs/{org_id}/devices', { params: org, expect: 200 });
    await api.call('POST', '/orgs/{org_id}/emergencies', { params: org, body: { categoryName: 'No such category' }, expect: 422 });
    const declared = (
      await api.call('POST', '/orgs/{org_id}/emergencies', { params: org, body: { categoryName: 'Fire', description: 'Smoke in the gym' }, expect: 201 })
    ).json;
    const emergency = { ...org, emergency_id: declared.emergencyId };
    await api.call('GET', '/orgs/{org_id}/emergencies', { params: org, expect: 200 });
    await api.call('GET', '/orgs/{org_id}/emergencies', { params: org, query: { cursor: 'bm90IGEgY3Vyc29y' }, expect: 422 });
    await api.call('GET', '/orgs/{org_id}/emergencies/{emergency_id}', { params: emergency, expect: 200 });
    await api.call('GET', '/orgs/{org_id}/emergencies/{emergency_id}', { params: { ...org, emergency_id: unknown }, expect: 404 });
    await api.call('PATCH', '/orgs/{org_id}/emergencies/{emergency_id}', { params: emergency, body: { categoryName: 'Uncategorized' }, expect: 200 });
    const message = (
      await api.call('POST', '/orgs/{org_id}/emergencies/{emergency_id}/messages', {
        params: emergency,
        body: { content: 'Photo of the gym door', attachments: [{ src: `data:image/png;base64,${PNG}`, caption: 'door' }] },
        expect: 201,
      })
    ).json;
    await api.call('GET', '/orgs/{org_id}/emergencies/{emergency_id}/messages', { params: emergency, expect: 200 });
    const content = await api.call('GET', '/orgs/{org_id}/emergencies/{emergency_id}/attachments/{attachment_id}/content', {
      params: { ...emergency, attachment_id: message.attachments[0].attachmentId },
      expect: 200,
    });
    assert.equal(content.headers.get('content-type'), 'image/png');
    await api.call('GET', '/orgs/{org_id}/emergencies/{emergency_id}/attachments/{attachment_id}/content', {
      params: { ...emergency, attachment_id: 'no-such-attachment' },
      expect: 404,
    });
    await api.call('GET', '/orgs/{org_id}/emergencies/{emergency_id}/cap', { params: emergency, expect: 200 });
    await api.call('GET', '/orgs/{org_id}/cap/feed', { params: org, expect: 200 });
    await api.call('POST', '/orgs/{org_id}/cap', { params: org, body: CAP_INGEST_EXAMPLE, headers: { 'content-type': 'application/cap+xml' }, expect: 201 });
    const alert = {
      version: '4',
      status: 'firing',
      receiver: 'emergency-api',
      alerts: [{ status: 'firing', labels: { alertname: 'DiskFull' }, annotations: {}, startsAt: '2026-12-07T18:00:00.000Z', fingerprint: 'c3b1a2d4e5f60718' }],
    };
    await api.call('POST', '/orgs/{org_id}/integrations/alertmanager', { params: org, body: alert, expect: 200 });
    // PagerDuty's senders send no Authorization header: the routing key is in the body (an unknown one: only the service can tell).
    const event = { routing_key: routingKey, event_action: 'trigger', dedup_key: 'tour', payload: { summary: 'Tour', source: 'tour', severity: 'critical' } };
    await api.call('POST', '/integrations/pagerduty/v2/enqueue', { body: event, key: null, expect: 202 });
    await api.call('POST', '/integrations/pagerduty/v2/enqueue', { body: { ...event, routing_key: 'enk_int_0' }, key: null, expect: 400 });
    // The body of a resolution is optional: none, then an empty object (already resolved: 200).
    await api.call('POST', '/orgs/{org_id}/emergencies/{emergency_id}/resolutions', { params: emergency, expect: 201 });
    await api.call('POST', '/orgs/{org_id}/emergencies/{emergency_id}/resolutions', { params: emergency, body: {}, expect: 200 });
    await api.call('GET', '/orgs/{org_id}/events', { params: org, expect: 200 });
    await api.call('GET', '/orgs/{org_id}/emergencies/{emergency_id}/events', { params: emergency, expect: 200 });
    await api.call('GET', '/orgs/{org_id}/emergencies/{emergency_id}/receipts', { params: emergency, expect: 200 });
    await api.call('GET', '/orgs/{org_id}/audit-logs', { params: org, expect: 200 });

    // Prism reads an answer whole before checking it, and an event stream never ends by itself; it ends within 2 s
    // of its key being revoked, so the stream is read from the start, then its key is revoked to end it.
    const streamKey = (await admin.call('POST', '/api-keys', { body: { ...keySpec, name: 'stream key' }, expect: 201 })).json;
    const stream = api.call('GET', '/orgs/{org_id}/stream', { params: org, query: { after: '0' }, key: streamKey.key, expect: 200 });
    await new Promise((r) => setTimeout(r, 300));
    await admin.call('POST', '/api-keys/{id}/revoke', { params: { id: streamKey.apiKeyId }, expect: 200 });
    const streamed = await stream;
    assert.match(streamed.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.match(streamed.text, /event: emergency\.declared/);

    // Revoked last: the device is listed above with its token rotated.
    await admin.call('POST', '/devices/{device_id}/revoke', { params: { device_id: device.deviceId }, expect: 200 });
    await admin.call('DELETE', '/webhooks/{id}', { params: { id: hook.webhookId }, expect: 200 });

    // The ping the test step sent is described among the document's webhooks.
    const ping = receiver.bodies.find((b) => (b as { eventType?: string }).eventType === 'webhook.ping') as Record<string, unknown>;
    assert.ok(ping, 'the webhook test sent a webhook.ping');
    const pingRef: string | undefined = publicDoc.webhooks?.['webhook.ping']?.post?.requestBody?.content?.['application/json']?.schema?.$ref;
    assert.ok(pingRef, 'the public document describes webhook.ping');
    // Prism cannot check what the service sends, so the ping is held against its schema's fields here.
    const pingSchema = publicDoc.components.schemas[pingRef.split('/').pop()!];
    assert.deepEqual(Object.keys(ping).sort(), [...pingSchema.required].sort());
    assert.deepEqual(Object.keys(ping.data as object).sort(), [...pingSchema.properties.data.required].sort());
    assert.equal(ping.eventType, pingSchema.properties.eventType.const);

    admin.assertCovered(adminDoc, 'admin');
    api.assertCovered(publicDoc, 'public');
  });
});
