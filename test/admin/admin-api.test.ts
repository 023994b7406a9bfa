import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { startReceiver, type Receiver, verify, waitFor } from '../delivery/helpers.js';
import { connectDevice } from '../devices/support.js';
import { client } from '../helpers/http.js';
import { connectMcp } from '../helpers/mcp.js';
import { createOrgTree, mintKey, startTestServer, type TestServer } from '../helpers/server.js';

/** The admin API over real HTTP: every route, scoping by the admin key's subject, one-time secrets, revocation. */
describe('admin API', () => {
  let server: TestServer;
  let receiver: Receiver;
  let root: ReturnType<typeof client>;
  let adminBase: string;

  const adminClient = (key?: string) => client(adminBase, key);

  before(async () => {
    server = await startTestServer(
      { WEBHOOK_RETRY_SCHEDULE: '0.2' },
      { dispatcher: { requestTimeoutMs: 1500, leaseMs: 3000, pollIntervalMs: 100 }, devices: { revocationCheckMs: 200 } },
    );
    adminBase = `${server.url}/api/admin/v1`;
    receiver = await startReceiver();
    root = adminClient((await createAdminKey(server.ctx, operatorCaller(), { name: 'root', subject: { type: 'instance' } })).key);
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  it('builds a tenant tree: partner, enterprise, org (with Uncategorized), category, user', async () => {
    const partner = await root.post('/partners', { name: 'Acme Safety' });
    assert.equal(partner.status, 201);
    assert.deepEqual(Object.keys(partner.body).sort(), ['createdAt', 'name', 'partnerId']);
    const enterprise = await root.post(`/partners/${partner.body.partnerId}/enterprises`, { name: 'North District' });
    assert.equal(enterprise.status, 201);
    assert.equal(enterprise.body.partnerId, partner.body.partnerId);
    assert.deepEqual((await root.get(`/partners/${partner.body.partnerId}/enterprises`)).body, { items: [enterprise.body], nextCursor: null });
    const org = await root.post(`/enterprises/${enterprise.body.enterpriseId}/orgs`, { name: 'Lincoln High' });
    assert.equal(org.status, 201);
    assert.equal(org.body.enterpriseId, enterprise.body.enterpriseId);
    const orgId = org.body.orgId;
    assert.deepEqual((await root.get(`/orgs/${orgId}`)).body, org.body);
    assert.deepEqual(
      (await root.get(`/enterprises/${enterprise.body.enterpriseId}/orgs`)).body.items.map((o: { orgId: string }) => o.orgId),
      [orgId],
    );
    assert.ok((await root.get('/partners?limit=200')).body.items.some((p: { partnerId: string }) => p.partnerId === partner.body.partnerId));

    const category = await root.post(`/orgs/${orgId}/categories`, { name: 'Lockdown', color: '#b71c1c', severity: 5, responseLevel: 'lockdown' });
    assert.equal(category.status, 201);
    assert.equal(category.body.color, '#B71C1C');
    assert.equal((await root.post(`/orgs/${orgId}/categories`, { name: 'lockdown', color: '#000000', severity: 1, responseLevel: 'hold' })).status, 409);
    const changed = await root.patch(`/orgs/${orgId}/categories/${category.body.categoryId}`, { severity: 4 });
    assert.equal(changed.status, 200);
    assert.equal(changed.body.severity, 4);
    // The public API sees the change; Uncategorized cannot be changed.
    const publicKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: orgId })).key;
    const categories = (await client(server.base, publicKey).get(`/orgs/${orgId}/emergencies/categories`)).body.items;
    assert.equal(categories.find((c: { name: string }) => c.name === 'Lockdown').severity, 4);
    const uncategorized = categories.find((c: { isSystem: boolean }) => c.isSystem);
    const immutable = await root.patch(`/orgs/${orgId}/categories/${uncategorized.categoryId}`, { name: 'Other' });
    assert.equal(immutable.status, 409);
    assert.equal(immutable.body.detail.error, 'conflict');

    const user = await root.post(`/orgs/${orgId}/users`, { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.test', role: 'responder' });
    assert.equal(user.status, 201);
    assert.equal(user.body.role, 'responder');
    assert.equal(user.body.partnerName, 'Acme Safety');
    const moved = await root.patch(`/orgs/${orgId}/users/${user.body.userId}`, { status: 'disabled', phoneNumber: '+15550100' });
    assert.equal(moved.body.status, 'disabled');
    assert.equal(moved.body.phoneNumber, '+15550100');
    assert.equal((await root.patch(`/orgs/${orgId}/users/00000000-0000-4000-8000-000000000000`, { status: 'active' })).body.detail.error, 'not_found');
  });

  it('validates bodies strictly, with the public API error shapes', async () => {
    const extra = await root.post('/partners', { name: 'X', nmae: 'typo' });
    assert.equal(extra.status, 422);
    assert.deepEqual(extra.body.detail[0].loc, ['body', 'nmae']);
    assert.equal(extra.body.detail[0].type, 'extra_forbidden');
    const missing = await root.post('/partners', {});
    assert.deepEqual(missing.body.detail[0].loc, ['body', 'name']);
    const badColor = await root.post(`/orgs/${(await createOrgTree(server.ctx)).orgId}/categories`, {
      name: 'C',
      color: 'red',
      severity: 1,
      responseLevel: 'hold',
    });
    assert.deepEqual(badColor.body.detail[0].loc, ['body', 'color']);
    assert.equal((await root.get('/enterprises/nope/orgs')).status, 404);
    assert.equal((await root.get('/partners?limit=0')).status, 422);
    const noKey = await adminClient().get('/partners');
    assert.equal(noKey.status, 401);
    assert.equal(noKey.headers.get('www-authenticate'), 'Bearer');
    assert.ok(noKey.headers.get('x-request-id'));
  });

  it('scopes every route by the admin key subject: an enterprise key cannot reach another enterprise, only instance keys create partners', async () => {
    const a = await createOrgTree(server.ctx);
    const b = await createOrgTree(server.ctx, { partnerId: a.partnerId });
    const elsewhere = await createOrgTree(server.ctx);
    const enterpriseAdmin = adminClient((await root.post('/admin-keys', { name: 'ent', subject: { type: 'enterprise', id: a.enterpriseId } })).body.key);
    const partnerAdmin = adminClient((await root.post('/admin-keys', { name: 'partner', subject: { type: 'partner', id: a.partnerId } })).body.key);

    const denied = await partnerAdmin.post('/partners', { name: 'Rogue' });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.detail.error, 'subject_not_covered');
    assert.equal((await enterpriseAdmin.post(`/enterprises/${a.enterpriseId}/orgs`, { name: 'Annex' })).status, 201);
    // Ids outside the key's subject are answered as unknown ones (extensions §13).
    assert.equal((await enterpriseAdmin.post(`/enterprises/${b.enterpriseId}/orgs`, { name: 'Annex' })).body.detail.error, 'not_found');
    assert.equal((await enterpriseAdmin.get(`/orgs/${b.orgId}`)).status, 404);
    assert.equal((await partnerAdmin.get(`/orgs/${b.orgId}`)).status, 200);
    assert.equal((await partnerAdmin.get(`/orgs/${elsewhere.orgId}`)).status, 404);
    assert.equal((await enterpriseAdmin.post(`/partners/${a.partnerId}/enterprises`, { name: 'Sibling' })).status, 404);
    assert.equal((await partnerAdmin.post('/api-keys', { name: 'x', subject: { type: 'org', id: elsewhere.orgId }, permissions: ['read'] })).status, 404);
    assert.equal((await enterpriseAdmin.post('/admin-keys', { name: 'up', subject: { type: 'partner', id: a.partnerId } })).status, 404);
    assert.equal((await enterpriseAdmin.post('/admin-keys', { name: 'root', subject: { type: 'instance' } })).status, 403);
    assert.deepEqual((await enterpriseAdmin.get('/partners')).body.items, []);
    assert.deepEqual(
      (await partnerAdmin.get('/partners')).body.items.map((p: { partnerId: string }) => p.partnerId),
      [a.partnerId],
    );
    // Lists show what lies beneath the subject only.
    const webhook = await root.post('/webhooks', { url: `${receiver.url}/scoped`, subject: { type: 'org', id: elsewhere.orgId } });
    assert.ok(!(await partnerAdmin.get('/webhooks?limit=200')).body.items.some((w: { webhookId: string }) => w.webhookId === webhook.body.webhookId));
    assert.equal((await partnerAdmin.get(`/webhooks/${webhook.body.webhookId}`)).status, 404);
    assert.equal((await partnerAdmin.get('/webhooks/00000000-0000-4000-8000-000000000000')).status, 404);

    // On the public API the admin key reads and writes the orgs beneath its subject, as itself in the audit log.
    const opsDesk = (await root.post('/admin-keys', { name: 'ops desk', subject: { type: 'enterprise', id: a.enterpriseId } })).body;
    const publicAsAdmin = client(server.base, opsDesk.key);
    const declared = await publicAsAdmin.post(`/orgs/${a.orgId}/emergencies`, { description: 'drill' });
    assert.equal(declared.status, 201);
    // The admin key declares as itself (extensions §5), under its own id and name.
    assert.deepEqual(declared.body.declaredBy, { type: 'admin_key', id: opsDesk.adminKeyId, name: 'ops desk' });
    assert.equal((await publicAsAdmin.get(`/orgs/${b.orgId}/emergencies`)).body.detail.error, 'org_not_covered');
    const audit = await publicAsAdmin.get(`/orgs/${a.orgId}/audit-logs?eventCategory=emergency`);
    assert.equal(audit.body.items[0].actor.type, 'admin_key');
    assert.equal(audit.body.items[0].actor.name, 'ops desk');
  });

  it('refuses API keys on the admin API and admin keys on the tool server', async () => {
    const org = await createOrgTree(server.ctx);
    const apiKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    const refused = await adminClient(apiKey).get('/partners');
    assert.equal(refused.status, 401);
    assert.equal(refused.body.detail.error, 'unauthenticated');
    const adminKey = (await root.post('/admin-keys', { name: 'no mcp', subject: { type: 'instance' } })).body.key;
    await assert.rejects(connectMcp(server.url, adminKey), /401|Unauthorized|unauthenticated/i);
  });

  it('mints, lists, rotates and revokes API keys; the key is shown once and a revoked key is refused within 5 s', async () => {
    const org = await createOrgTree(server.ctx);
    const created = await root.post('/api-keys', { name: 'integration', subject: { type: 'org', id: org.orgId }, permissions: ['read', 'write'] });
    assert.equal(created.status, 201);
    assert.match(created.body.key, /^enk_live_[0-9a-f]{72}$/);
    const id = created.body.apiKeyId;
    const read = await root.get(`/api-keys/${id}`);
    assert.equal(read.body.key, undefined);
    assert.deepEqual(read.body.subject, { type: 'org', id: org.orgId });
    assert.ok((await root.get('/api-keys?limit=200')).body.items.every((k: { key?: string }) => k.key === undefined));
    const api = client(server.base, created.body.key);
    assert.equal((await api.get(`/orgs/${org.orgId}/emergencies`)).status, 200);

    const rotated = await root.post(`/api-keys/${id}/rotate`, { graceHours: 0 });
    assert.equal(rotated.status, 201);
    assert.notEqual(rotated.body.apiKeyId, id);
    assert.match(rotated.body.key, /^enk_live_/);
    assert.ok(rotated.body.previousKeyExpiresAt);
    assert.equal((await client(server.base, rotated.body.key).get(`/orgs/${org.orgId}/emergencies`)).status, 200);

    const revoked = await root.post(`/api-keys/${rotated.body.apiKeyId}/revoke`);
    assert.equal(revoked.status, 200);
    assert.equal(revoked.body.status, 'inactive');
    const startedAt = Date.now();
    await waitFor(
      'the revoked key to be refused',
      async () => (await client(server.base, rotated.body.key).get(`/orgs/${org.orgId}/emergencies`)).status === 401,
      5_000,
    );
    assert.ok(Date.now() - startedAt <= 5_000);
    assert.equal((await root.get('/api-keys/not-a-key')).status, 404);
  });

  it('replays a keyed create without its secret, and refuses another request under the same key', async () => {
    const org = await createOrgTree(server.ctx);
    const body = { name: 'once', subject: { type: 'org', id: org.orgId }, permissions: ['read'] };
    const first = await root.post('/api-keys', body, { 'idempotency-key': 'mint-once' });
    assert.equal(first.status, 201);
    assert.ok(first.body.key);
    const again = await root.post('/api-keys', body, { 'idempotency-key': 'mint-once' });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.body.apiKeyId, first.body.apiKeyId);
    assert.equal(again.body.key, undefined, 'the stored answer holds no secret');
    const other = await root.post('/api-keys', { ...body, name: 'other' }, { 'idempotency-key': 'mint-once' });
    assert.equal(other.status, 422);
    assert.equal(other.body.detail.error, 'idempotency_key_reused');
    assert.equal((await root.get('/api-keys?limit=200')).body.items.filter((k: { name: string }) => k.name === 'once').length, 1);
  });

  it('manages webhooks: create (secret once), read, update, test, disable, enable, replay, deliveries, rotate, delete', async () => {
    const org = await createOrgTree(server.ctx);
    const created = await root.post('/webhooks', { url: `${receiver.url}/admin`, subject: { type: 'org', id: org.orgId }, eventTypes: ['emergency.declared'] });
    assert.equal(created.status, 201);
    assert.match(created.body.secret, /^whsec_/);
    const id = created.body.webhookId;
    assert.equal((await root.get(`/webhooks/${id}`)).body.secret, undefined);
    const privateUrl = await root.post('/webhooks', { url: 'ftp://example.com/x', subject: { type: 'org', id: org.orgId } });
    assert.equal(privateUrl.status, 422);

    const api = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'smoke' });
    const delivery = await waitFor('the delivery', () => receiver.forPath('/admin')[0]);
    assert.equal(verify(created.body.secret, delivery).eventId, delivery.json.eventId);
    const deliveries = await waitFor('a delivered record', async () => {
      const res = await root.get(`/webhooks/${id}/deliveries`);
      return res.body.items[0]?.status === 'delivered' ? res : null;
    });
    assert.equal(deliveries.body.items[0].eventType, 'emergency.declared');
    assert.equal(deliveries.body.items[0].attempts[0].responseStatus, 204);

    const test = await root.post(`/webhooks/${id}/test`);
    assert.equal(test.status, 200);
    assert.equal(test.body.outcome, 'succeeded');
    assert.equal(test.body.status, 204);

    const updated = await root.patch(`/webhooks/${id}`, { eventTypes: null });
    assert.equal(updated.body.eventTypes, null);
    assert.equal((await root.post(`/webhooks/${id}/disable`)).body.status, 'disabled');
    assert.equal((await root.post(`/webhooks/${id}/enable`)).body.status, 'active');

    const replay = await root.post(`/webhooks/${id}/replay`, { since: new Date(Date.now() - 60_000).toISOString() });
    assert.equal(replay.status, 200);
    assert.equal(replay.body.replayed, 1);
    await waitFor('the replayed delivery', () => receiver.forPath('/admin').filter((r) => r.json?.emergencyId === declared.body.emergencyId).length >= 2);

    const rotated = await root.post(`/webhooks/${id}/rotate-secret`);
    assert.match(rotated.body.secret, /^whsec_/);
    assert.notEqual(rotated.body.secret, created.body.secret);
    assert.equal((await root.call('DELETE', `/webhooks/${id}`)).body.deleted, true);
    assert.equal((await root.get(`/webhooks/${id}`)).status, 404);
  });

  it('registers a fleet in one request, lists it, rotates a token, and a revoked device is disconnected', async () => {
    const org = await createOrgTree(server.ctx);
    const fleet = await root.post(`/orgs/${org.orgId}/devices`, {
      devices: Array.from({ length: 50 }, (_, i) => ({ name: `Station ${String(i).padStart(2, '0')}` })),
    });
    assert.equal(fleet.status, 201);
    assert.equal(fleet.body.items.length, 50);
    assert.ok(fleet.body.items.every((d: { token: string }) => /^enk_dev_[0-9a-f]{72}$/.test(d.token)));
    const one = await root.post(`/orgs/${org.orgId}/devices`, { name: 'Gym' });
    assert.equal(one.status, 201);
    assert.equal(one.body.name, 'Gym');
    const tooMany = await root.post(`/orgs/${org.orgId}/devices`, { devices: Array.from({ length: 1001 }, () => ({ name: 'x' })) });
    assert.equal(tooMany.status, 422);
    const listed = await root.get(`/orgs/${org.orgId}/devices?limit=200`);
    assert.equal(listed.body.items.length, 51);
    assert.ok(listed.body.items.every((d: { token?: string }) => d.token === undefined));

    const wsUrl = `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`;
    const rotated = await root.post(`/devices/${one.body.deviceId}/rotate-token`);
    assert.equal(rotated.status, 200);
    await assert.rejects(connectDevice(wsUrl, one.body.token), /401/);
    const socket = await connectDevice(wsUrl, rotated.body.token);
    const revoked = await root.post(`/devices/${one.body.deviceId}/revoke`);
    assert.equal(revoked.body.status, 'revoked');
    await socket.until(() => socket.closeCode !== null, 5_000, 'the socket to close');
    assert.equal(socket.closeCode, 4401);
    assert.equal((await root.post(`/devices/${one.body.deviceId}/rotate-token`)).status, 409);
  });

  it('lists and revokes admin keys; a revoked admin key is refused', async () => {
    const minted = await root.post('/admin-keys', { name: 'temporary', subject: { type: 'instance' } });
    assert.match(minted.body.key, /^enk_adm_[0-9a-f]{72}$/);
    const temporary = adminClient(minted.body.key);
    assert.equal((await temporary.get('/partners')).status, 200);
    const listed = await root.get('/admin-keys?limit=200');
    assert.ok(listed.body.items.some((k: { adminKeyId: string; key?: string }) => k.adminKeyId === minted.body.adminKeyId && k.key === undefined));
    assert.equal((await root.post(`/admin-keys/${minted.body.adminKeyId}/revoke`)).body.status, 'inactive');
    await waitFor('the revoked admin key to be refused', async () => (await temporary.get('/partners')).status === 401, 5_000);
  });

  it('serves a valid OpenAPI document of its own, apart from the public one', async () => {
    const doc = (await adminClient().get('/openapi.json')).body;
    await SwaggerParser.validate(structuredClone(doc));
    assert.equal(doc.servers[0].url, '/api/admin/v1');
    for (const path of [
      '/partners',
      '/partners/{partner_id}/enterprises',
      '/enterprises/{enterprise_id}/orgs',
      '/api-keys/{id}/rotate',
      '/webhooks/{id}/deliveries',
      '/devices/{device_id}/rotate-token',
      '/admin-keys',
    ]) {
      assert.ok(doc.paths[path], path);
    }
    const publicDoc = (await client(server.base).get('/openapi.json')).body;
    assert.ok(!Object.keys(publicDoc.paths).some((p) => p.startsWith('/api/admin')));
  });
});
