import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { createCategory } from '../../src/domain/categories/service.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { createOrg } from '../../src/domain/orgs/service.js';
import { example, postCap } from '../cap/support.js';
import { type ApiResponse, client } from '../helpers/http.js';
import { connectMcp } from '../helpers/mcp.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** extensions §13, "Small items": what one tenant could learn of or do to another through the edges of the APIs. */
describe('small items of extensions §13', () => {
  let server: TestServer;
  let root: ReturnType<typeof client>;
  /** Tenant A: a partner with an admin key of its own; tenant B: another partner. */
  let a: OrgFixture;
  let b: OrgFixture;
  let adminA: ReturnType<typeof client>;
  const admin = (key?: string) => client(`${server.url}/api/admin/v1`, key);
  const UNKNOWN = '00000000-0000-4000-8000-00000000000f';

  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
    root = admin((await createAdminKey(server.ctx, operatorCaller(), { name: 'root', subject: { type: 'instance' } })).key);
    a = await createOrgTree(server.ctx);
    b = await createOrgTree(server.ctx);
    adminA = admin((await createAdminKey(server.ctx, operatorCaller(), { name: 'tenant A', subject: { type: 'partner', id: a.partnerId } })).key);
  });
  after(() => server.close());

  describe('the admin API answers ids outside the key subject as unknown ones (404)', () => {
    it('on every route that names an id, with the same body but for the id', async () => {
      const key = (await root.post('/api-keys', { name: 'b', subject: { type: 'org', id: b.orgId }, permissions: ['read'] })).body;
      const webhook = (await root.post('/webhooks', { url: 'https://hooks.example.com/b', subject: { type: 'org', id: b.orgId } })).body;
      const device = await createDevice(server.ctx, operatorCaller(), b.orgId, { name: 'Gym' });
      const adminB = (await root.post('/admin-keys', { name: 'tenant B', subject: { type: 'partner', id: b.partnerId } })).body;
      const rootKey = (await root.post('/admin-keys', { name: 'another root', subject: { type: 'instance' } })).body;
      const mapping = (await root.post(`/orgs/${b.orgId}/cap-mappings`, { event: 'Flood', categoryName: 'Fire' })).body;
      const category = { name: 'Flood', color: '#1565C0', severity: 3, responseLevel: 'shelter' };
      const user = { firstName: 'Grace', lastName: 'Hopper', email: 'grace@example.test' };
      const ids = {
        partner: b.partnerId,
        enterprise: b.enterpriseId,
        org: b.orgId,
        category: b.categories.Fire!,
        key: key.apiKeyId as string,
        webhook: webhook.webhookId as string,
        device: device.id,
        adminKey: adminB.adminKeyId as string,
        rootKey: rootKey.adminKeyId as string,
        mapping: mapping.mappingId as string,
      };
      for (const [name, id] of Object.entries(ids)) assert.match(String(id), /^[0-9a-f-]{36}$/, name);
      type Ids = typeof ids;
      const calls: [string, keyof Ids, (id: Ids) => Promise<ApiResponse>][] = [
        ['GET /partners/{id}/enterprises', 'partner', (id) => adminA.get(`/partners/${id.partner}/enterprises`)],
        ['POST /partners/{id}/enterprises', 'partner', (id) => adminA.post(`/partners/${id.partner}/enterprises`, { name: 'Rogue' })],
        ['GET /enterprises/{id}/orgs', 'enterprise', (id) => adminA.get(`/enterprises/${id.enterprise}/orgs`)],
        ['POST /enterprises/{id}/orgs', 'enterprise', (id) => adminA.post(`/enterprises/${id.enterprise}/orgs`, { name: 'Annex' })],
        ['GET /orgs/{id}', 'org', (id) => adminA.get(`/orgs/${id.org}`)],
        ['PATCH /orgs/{id}', 'org', (id) => adminA.patch(`/orgs/${id.org}`, { name: 'Renamed' })],
        ['GET /orgs/{id}/devices', 'org', (id) => adminA.get(`/orgs/${id.org}/devices`)],
        ['POST /orgs/{id}/devices', 'org', (id) => adminA.post(`/orgs/${id.org}/devices`, { name: 'Gym' })],
        ['POST /orgs/{id}/categories', 'org', (id) => adminA.post(`/orgs/${id.org}/categories`, category)],
        ['PATCH /orgs/{id}/categories/{c}', 'org', (id) => adminA.patch(`/orgs/${id.org}/categories/${id.category}`, { severity: 2 })],
        ['POST /orgs/{id}/users', 'org', (id) => adminA.post(`/orgs/${id.org}/users`, user)],
        ['GET /orgs/{id}/cap-mappings', 'org', (id) => adminA.get(`/orgs/${id.org}/cap-mappings`)],
        ['DELETE /orgs/{id}/cap-mappings/{m}', 'org', (id) => adminA.call('DELETE', `/orgs/${id.org}/cap-mappings/${id.mapping}`)],
        ['POST /api-keys (subject)', 'org', (id) => adminA.post('/api-keys', { name: 'x', subject: { type: 'org', id: id.org }, permissions: ['read'] })],
        ['POST /webhooks (subject)', 'org', (id) => adminA.post('/webhooks', { url: 'https://hooks.example.com/a', subject: { type: 'org', id: id.org } })],
        ['POST /admin-keys (subject)', 'partner', (id) => adminA.post('/admin-keys', { name: 'x', subject: { type: 'partner', id: id.partner } })],
        ['GET /api-keys/{id}', 'key', (id) => adminA.get(`/api-keys/${id.key}`)],
        ['POST /api-keys/{id}/rotate', 'key', (id) => adminA.post(`/api-keys/${id.key}/rotate`)],
        ['POST /api-keys/{id}/revoke', 'key', (id) => adminA.post(`/api-keys/${id.key}/revoke`)],
        ['GET /webhooks/{id}', 'webhook', (id) => adminA.get(`/webhooks/${id.webhook}`)],
        ['PATCH /webhooks/{id}', 'webhook', (id) => adminA.patch(`/webhooks/${id.webhook}`, { url: 'https://hooks.example.com/stolen' })],
        ['DELETE /webhooks/{id}', 'webhook', (id) => adminA.call('DELETE', `/webhooks/${id.webhook}`)],
        ['GET /webhooks/{id}/deliveries', 'webhook', (id) => adminA.get(`/webhooks/${id.webhook}/deliveries`)],
        ['POST /devices/{id}/rotate-token', 'device', (id) => adminA.post(`/devices/${id.device}/rotate-token`)],
        ['POST /devices/{id}/revoke', 'device', (id) => adminA.post(`/devices/${id.device}/revoke`)],
        ['POST /admin-keys/{id}/revoke (partner key)', 'adminKey', (id) => adminA.post(`/admin-keys/${id.adminKey}/revoke`)],
        ['POST /admin-keys/{id}/revoke (instance key)', 'rootKey', (id) => adminA.post(`/admin-keys/${id.rootKey}/revoke`)],
      ];
      const unknownIds = Object.fromEntries(Object.keys(ids).map((k) => [k, UNKNOWN])) as Ids;
      for (const [route, named, call] of calls) {
        const outside = await call(ids);
        const unknown = await call(unknownIds);
        assert.equal(outside.status, 404, `${route}: ${JSON.stringify(outside.body)}`);
        assert.equal(unknown.status, 404, route);
        const shown = (res: ApiResponse, id: string) => JSON.stringify(res.body).replaceAll(id, '<id>');
        assert.equal(shown(outside, ids[named]), shown(unknown, UNKNOWN), route);
      }
      // Nothing was changed by the refused calls.
      assert.equal((await root.get(`/webhooks/${ids.webhook}`)).body.url, 'https://hooks.example.com/b');
      assert.equal((await root.get(`/api-keys/${ids.key}`)).body.status, 'active');
    });
  });

  describe('allowedOrgIds must lie within the subject (422)', () => {
    it('for API keys and webhook subscriptions, created or changed; another tenant’s org and an unknown one alike', async () => {
      const sibling = (await createOrg(server.ctx, operatorCaller(), a.enterpriseId, { name: 'Sibling' })).orgId;
      const otherEnterprise = await createOrgTree(server.ctx, { partnerId: a.partnerId });
      const enterpriseA = { type: 'enterprise', id: a.enterpriseId };
      const refusedLists: [string, string[]][] = [
        ["another tenant's org", [a.orgId, b.orgId]],
        ['an unknown id', [a.orgId, UNKNOWN]],
        ['an org of the same partner outside the enterprise', [a.orgId, otherEnterprise.orgId]],
      ];
      const create = {
        key: (allowedOrgIds: string[]) => adminA.post('/api-keys', { name: 'narrow', subject: enterpriseA, permissions: ['read'], allowedOrgIds }),
        webhook: (allowedOrgIds: string[]) => adminA.post('/webhooks', { url: 'https://hooks.example.com/narrow', subject: enterpriseA, allowedOrgIds }),
      };
      const messages = new Set<string>();
      for (const [what, list] of refusedLists) {
        for (const [kind, call] of Object.entries(create)) {
          const res = await call(list);
          assert.equal(res.status, 422, `${kind}, ${what}: ${JSON.stringify(res.body)}`);
          assert.deepEqual(
            res.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type]),
            [[['body', 'allowedOrgIds', 1], 'org_outside_subject']],
          );
          messages.add(res.body.detail[0].msg);
        }
      }
      assert.equal(messages.size, 1, 'one message whatever the id names');
      const key = await create.key([a.orgId, sibling.toUpperCase()]);
      assert.equal(key.status, 201, JSON.stringify(key.body));
      assert.deepEqual(key.body.allowedOrgIds, [a.orgId, sibling]);
      const webhook = await create.webhook([sibling]);
      assert.equal(webhook.status, 201, JSON.stringify(webhook.body));
      const changed = await adminA.patch(`/webhooks/${webhook.body.webhookId}`, { allowedOrgIds: [b.orgId] });
      assert.equal(changed.status, 422);
      assert.deepEqual(changed.body.detail[0].loc, ['body', 'allowedOrgIds', 0]);
      assert.deepEqual((await adminA.get(`/webhooks/${webhook.body.webhookId}`)).body.allowedOrgIds, [sibling]);
      assert.equal((await adminA.patch(`/webhooks/${webhook.body.webhookId}`, { allowedOrgIds: [a.orgId] })).status, 200);
    });
  });

  describe('occurredAt outside the years 1970..9999 (in UTC) is 422', () => {
    let orgKey: string;
    let api: ReturnType<typeof client>;
    before(async () => {
      orgKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId })).key;
      api = client(server.base, orgKey);
    });
    const outOfRange = [
      '0000-01-01T00:00:00Z',
      '1969-12-31T23:59:59.999Z',
      '1970-01-01T00:30+01:00',
      '9999-12-31T23:30-01:00',
      '9999-12-31T23:59:59.9999-00:01',
    ];

    it('on REST, at both ends; the bounds themselves are stored as written in UTC', async () => {
      for (const occurredAt of outOfRange) {
        const res = await api.post(`/orgs/${a.orgId}/emergencies`, { occurredAt });
        assert.equal(res.status, 422, `${occurredAt}: ${JSON.stringify(res.body)}`);
        assert.deepEqual(res.body.detail[0].loc, ['body', 'occurredAt']);
        assert.match(res.body.detail[0].msg, /1970-01-01T00:00:00Z and 9999-12-31T23:59:59\.999Z/);
      }
      for (const [occurredAt, stored] of [
        ['1970-01-01T00:00:00+00:00', '1970-01-01T00:00:00.000Z'],
        ['9999-12-31T23:30+00:00', '9999-12-31T23:30:00.000Z'],
        ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
      ]) {
        const res = await api.post(`/orgs/${a.orgId}/emergencies`, { occurredAt });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        assert.equal(res.body.occurredAt, stored);
        assert.equal((await api.get(`/orgs/${a.orgId}/emergencies/${res.body.emergencyId}`)).body.occurredAt, stored);
      }
      const listed = await api.get(`/orgs/${a.orgId}/emergencies?limit=200`);
      assert.ok(!JSON.stringify(listed.body).includes('+0'), 'no answer carries an expanded year');
    });

    it('on the tool server (create_emergency) and in CAP ingest (sent)', async () => {
      const mcp = await connectMcp(server.url, orgKey);
      try {
        for (const occurredAt of outOfRange) {
          const error = await mcp.fail('create_emergency', { orgId: a.orgId, occurredAt });
          assert.equal(error.status, 422, `${occurredAt}: ${JSON.stringify(error)}`);
        }
      } finally {
        await mcp.close();
      }
      const a1 = example('a1-homeland-security-advisory');
      for (const sent of ['9999-12-31T23:30:00-01:00', '1969-07-20T20:17:40-00:00']) {
        const res = await postCap(server.base, orgKey, a.orgId, a1.replace(/<sent>[^<]*<\/sent>/, `<sent>${sent}</sent>`));
        assert.equal(res.status, 422, `${sent}: ${JSON.stringify(res.body)}`);
        assert.deepEqual(res.body.detail[0].loc, ['body', 'sent']);
      }
    });
  });

  describe('resolving an already resolved emergency takes the read permission to see its record', () => {
    it('on REST and on the tool server: 403 permission_denied naming "read", without the record', async () => {
      await createCategory(server.ctx, operatorCaller(), b.orgId, { name: 'Secret drill', color: '#333333', severity: 2, responseLevel: 'shelter' });
      const readWrite = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: b.orgId })).key);
      const writeOnlyKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: b.orgId, permissions: ['write'] })).key;
      const writeOnly = client(server.base, writeOnlyKey);
      const declared = (await readWrite.post(`/orgs/${b.orgId}/emergencies`, { categoryName: 'Secret drill', description: 'not for the write-only key' })).body;
      const resolved = await readWrite.post(`/orgs/${b.orgId}/emergencies/${declared.emergencyId}/resolutions`, { resolutionNote: 'all clear' });
      assert.equal(resolved.status, 201);

      const again = await writeOnly.post(`/orgs/${b.orgId}/emergencies/${declared.emergencyId}/resolutions`, {});
      assert.equal(again.status, 403, JSON.stringify(again.body));
      assert.equal(again.body.detail.error, 'permission_denied');
      assert.match(again.body.detail.message, /lacks the "emergencies:read" permission/);
      assert.ok(!JSON.stringify(again.body).includes('not for the write-only key') && !JSON.stringify(again.body).includes('all clear'));
      // A key that may read gets the existing resolution, as before.
      const reader = await readWrite.post(`/orgs/${b.orgId}/emergencies/${declared.emergencyId}/resolutions`, {});
      assert.equal(reader.status, 200);
      assert.equal(reader.body.resolutionNote, 'all clear');

      const mcp = await connectMcp(server.url, writeOnlyKey);
      try {
        const error = await mcp.fail('resolve_emergency', { orgId: b.orgId, emergencyId: declared.emergencyId });
        assert.equal(error.status, 403, JSON.stringify(error));
        assert.equal(error.error, 'permission_denied');
        assert.ok(!JSON.stringify(error).includes(resolved.body.resolvedAt));
      } finally {
        await mcp.close();
      }
      // The write-only key still resolves what is open, and is answered with what it wrote.
      const own = (await writeOnly.post(`/orgs/${b.orgId}/emergencies`, {})).body;
      assert.equal((await writeOnly.post(`/orgs/${b.orgId}/emergencies/${own.emergencyId}/resolutions`, {})).status, 201);
    });
  });
});
