import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { createOrg } from '../../src/domain/orgs/service.js';
import { keyCommands } from '../../src/cli/admin-keys.js';
import type { AdminCommand } from '../../src/cli/command.js';
import { type Receiver, startReceiver } from '../delivery/helpers.js';
import { type ApiResponse, client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** The low-severity findings of "isolation under abuse" (extensions §5, §9), over real HTTP. */
describe('admin API under abuse', () => {
  let server: TestServer;
  let receiver: Receiver;
  let root: ReturnType<typeof client>;
  const admin = (key?: string) => client(`${server.url}/api/admin/v1`, key);
  const publicApi = async (orgId: string) => client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: orgId })).key);
  const auditOf = async (orgId: string, eventType: string) =>
    (await (await publicApi(orgId)).get(`/orgs/${orgId}/audit-logs?eventCategory=${eventType.split('.')[0]}&eventType=${eventType}`)).body.items as {
      details: Record<string, unknown>;
    }[];

  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
    receiver = await startReceiver();
    root = admin((await createAdminKey(server.ctx, operatorCaller(), { name: 'root', subject: { type: 'instance' } })).key);
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  describe('Idempotency-Key on every POST', () => {
    it('a replayed rotate-secret rotates nothing and shows no secret', async () => {
      const org = await createOrgTree(server.ctx);
      const webhook = (await root.post('/webhooks', { url: `${receiver.url}/rotate`, subject: { type: 'org', id: org.orgId } })).body;
      const first = await root.post(`/webhooks/${webhook.webhookId}/rotate-secret`, undefined, { 'idempotency-key': 'rotate-once' });
      assert.equal(first.status, 200);
      assert.match(first.body.secret, /^whsec_/);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      const again = await root.post(`/webhooks/${webhook.webhookId}/rotate-secret`, undefined, { 'idempotency-key': 'rotate-once' });
      assert.equal(again.status, 200);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(again.body, { webhookId: webhook.webhookId, previousSecretExpiresAt: first.body.previousSecretExpiresAt });
      assert.equal((await auditOf(org.orgId, 'webhook.secret_rotated')).length, 1, 'one rotation');
      const reused = await root.post(`/webhooks/${webhook.webhookId}/test`, undefined, { 'idempotency-key': 'rotate-once' });
      assert.equal(reused.status, 422);
      assert.equal(reused.body.detail.error, 'idempotency_key_reused');
      assert.equal(receiver.forPath('/rotate').length, 0, 'a refused request sends nothing');
    });

    it('a replayed test sends nothing and answers the first outcome', async () => {
      const org = await createOrgTree(server.ctx);
      const webhook = (await root.post('/webhooks', { url: `${receiver.url}/ping`, subject: { type: 'org', id: org.orgId } })).body;
      const first = await root.post(`/webhooks/${webhook.webhookId}/test`, undefined, { 'idempotency-key': 'ping-once' });
      assert.equal(first.status, 200);
      assert.equal(first.body.outcome, 'succeeded');
      assert.equal(receiver.forPath('/ping').length, 1);
      const again = await root.post(`/webhooks/${webhook.webhookId}/test`, undefined, { 'idempotency-key': 'ping-once' });
      assert.equal(again.status, 200);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(again.body, first.body);
      // The test answers once the ping was sent: a second send would have arrived by now.
      assert.equal(receiver.forPath('/ping').length, 1);
      assert.equal((await root.get(`/webhooks/${webhook.webhookId}/deliveries`)).body.items.length, 1);
      assert.equal((await auditOf(org.orgId, 'webhook.tested')).length, 1);
    });

    it('every POST and PATCH of both APIs takes the header', async () => {
      for (const api of ['public', 'admin']) {
        const document = (await (await fetch(`${server.url}/api/${api}/v1/openapi.json`)).json()) as {
          paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>>;
        };
        const without = Object.entries(document.paths).flatMap(([path, operations]) =>
          Object.entries(operations)
            .filter(([method]) => method === 'post' || method === 'patch')
            .filter(([, op]) => !op.parameters?.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key'))
            .map(([method]) => `${method.toUpperCase()} ${path}`),
        );
        assert.deepEqual(without, [], `${api} API`);
      }
    });
  });

  describe('ids in subjects are normalised', () => {
    let org: OrgFixture;
    before(async () => {
      org = await createOrgTree(server.ctx);
    });

    it('an admin key minted with an upper-case partner or enterprise id administers its subject', async () => {
      for (const [type, id] of [
        ['partner', org.partnerId],
        ['enterprise', org.enterpriseId],
      ] as const) {
        const created = await root.post('/admin-keys', { name: `${type} upper`, subject: { type, id: id.toUpperCase() } });
        assert.equal(created.status, 201);
        assert.deepEqual(created.body.subject, { type, id });
        const scoped = admin(created.body.key);
        const read = await scoped.get(`/orgs/${org.orgId}`);
        assert.equal(read.status, 200, `${type} key reads its org`);
        assert.equal(read.body.orgId, org.orgId);
        assert.equal((await scoped.get(`/orgs/${org.orgId}/devices`)).status, 200);
        const declared = await client(server.base, created.body.key).post(`/orgs/${org.orgId}/emergencies`, { description: `${type} drill` });
        assert.equal(declared.status, 201, `${type} key declares on the public API`);
      }
      assert.deepEqual(
        (
          await admin((await root.post('/admin-keys', { name: 'p', subject: { type: 'partner', id: org.partnerId.toUpperCase() } })).body.key).get('/partners')
        ).body.items.map((p: { partnerId: string }) => p.partnerId),
        [org.partnerId],
      );
    });

    it('the CLI normalises an admin key subject too', async () => {
      // The command as the CLI runs it, in this process (its argument parsing is the CLI suite's).
      const command = keyCommands['admin admin-key create'] as AdminCommand;
      const input = command.input({ values: { name: 'cli upper', subject: `enterprise:${org.enterpriseId.toUpperCase()}` }, positionals: [] });
      const made = (await command.local(server.ctx, input)) as { key: string };
      assert.equal((await admin(made.key).get(`/orgs/${org.orgId}`)).status, 200);
    });

    it('API keys and webhooks store and record lower-case subjects and allowedOrgIds', async () => {
      const key = await root.post('/api-keys', {
        name: 'upper',
        subject: { type: 'enterprise', id: org.enterpriseId.toUpperCase() },
        permissions: ['read'],
        allowedOrgIds: [org.orgId.toUpperCase()],
      });
      assert.equal(key.status, 201);
      assert.deepEqual(key.body.subject, { type: 'enterprise', id: org.enterpriseId });
      assert.deepEqual(key.body.allowedOrgIds, [org.orgId]);
      assert.equal((await client(server.base, key.body.key).get(`/orgs/${org.orgId}/emergencies`)).status, 200);
      const created = (await auditOf(org.orgId, 'api_key.created')).find((e) => (e.details as { name: string }).name === 'upper');
      assert.deepEqual(created?.details.subject, { type: 'enterprise', id: org.enterpriseId });

      const webhook = await root.post('/webhooks', {
        url: `${receiver.url}/upper`,
        subject: { type: 'enterprise', id: org.enterpriseId.toUpperCase() },
        allowedOrgIds: [org.orgId.toUpperCase()],
      });
      assert.equal(webhook.status, 201);
      assert.deepEqual(webhook.body.subject, { type: 'enterprise', id: org.enterpriseId });
      assert.deepEqual(webhook.body.allowedOrgIds, [org.orgId]);
      const changed = await root.patch(`/webhooks/${webhook.body.webhookId}`, { allowedOrgIds: [org.orgId.toUpperCase()] });
      assert.deepEqual(changed.body.allowedOrgIds, [org.orgId]);
    });
  });

  it("an org's audit log names no other org of a webhook covering several", async () => {
    const a = await createOrgTree(server.ctx);
    const b = (await createOrg(server.ctx, operatorCaller(), a.enterpriseId, { name: 'Sibling' })).orgId;
    const c = (await createOrg(server.ctx, operatorCaller(), a.enterpriseId, { name: 'Other sibling' })).orgId;
    const webhook = (
      await root.post('/webhooks', { url: `${receiver.url}/audit`, subject: { type: 'enterprise', id: a.enterpriseId }, allowedOrgIds: [a.orgId, b] })
    ).body;
    await (await publicApi(a.orgId)).post(`/orgs/${a.orgId}/emergencies`, { description: 'one' });
    for (const n of [1, 2]) await (await publicApi(b)).post(`/orgs/${b}/emergencies`, { description: `b ${n}` });

    assert.equal((await root.patch(`/webhooks/${webhook.webhookId}`, { eventTypes: ['emergency.declared'] })).status, 200);
    assert.deepEqual(
      (await auditOf(a.orgId, 'webhook.updated')).map((e) => e.details.allowedOrgIds),
      [[a.orgId]],
    );
    assert.deepEqual(
      (await auditOf(b, 'webhook.updated')).map((e) => e.details.allowedOrgIds),
      [[b]],
    );
    assert.deepEqual(await auditOf(c, 'webhook.updated'), []);

    // Replayed: each org's entry counts its own events only.
    const replay = await root.post(`/webhooks/${webhook.webhookId}/replay`, { since: new Date(Date.now() - 60_000).toISOString() });
    assert.equal(replay.body.replayed, 3);
    assert.deepEqual(
      (await auditOf(a.orgId, 'webhook.replayed')).map((e) => e.details.requeued),
      [1],
    );
    assert.deepEqual(
      (await auditOf(b, 'webhook.replayed')).map((e) => e.details.requeued),
      [2],
    );

    // Narrowed to org A: org B hears it is left out, without learning which orgs remain.
    assert.equal((await root.patch(`/webhooks/${webhook.webhookId}`, { allowedOrgIds: [a.orgId] })).status, 200);
    assert.deepEqual(
      (await auditOf(b, 'webhook.updated')).map((e) => e.details.allowedOrgIds),
      [[], [b]],
    );
    for (const orgId of [a.orgId, b]) {
      const text = JSON.stringify((await (await publicApi(orgId)).get(`/orgs/${orgId}/audit-logs?eventCategory=webhook`)).body);
      for (const other of [a.orgId, b, c].filter((id) => id !== orgId)) assert.ok(!text.includes(other), `org ${orgId}'s log names ${other}`);
    }
  });

  it('an admin key acting on the public API is recorded as admin_key in declaredBy, resolvedBy and the audit log', async () => {
    const org = await createOrgTree(server.ctx);
    const desk = (await root.post('/admin-keys', { name: 'ops desk', subject: { type: 'enterprise', id: org.enterpriseId } })).body;
    const asAdmin = client(server.base, desk.key);
    const declared = await asAdmin.post(`/orgs/${org.orgId}/emergencies`, { description: 'drill' });
    assert.equal(declared.status, 201);
    assert.deepEqual(declared.body.declaredBy, { type: 'admin_key', id: desk.adminKeyId, name: 'ops desk' });
    const resolved = await asAdmin.post(`/orgs/${org.orgId}/emergencies/${declared.body.emergencyId}/resolutions`, {});
    assert.equal(resolved.status, 201);
    const read = (await asAdmin.get(`/orgs/${org.orgId}/emergencies/${declared.body.emergencyId}`)).body;
    assert.deepEqual(read.declaredBy, { type: 'admin_key', id: desk.adminKeyId, name: 'ops desk' });
    assert.deepEqual(read.resolvedBy, { type: 'admin_key', id: desk.adminKeyId, name: 'ops desk' });
    const audit = (await asAdmin.get(`/orgs/${org.orgId}/audit-logs?eventCategory=emergency`)).body.items;
    assert.ok(audit.length >= 2);
    assert.ok(audit.every((e: { actor: { type: string } }) => e.actor.type === 'admin_key'));
    // An API key and a named person are recorded as before.
    const api = await publicApi(org.orgId);
    assert.equal((await api.post(`/orgs/${org.orgId}/emergencies`, {})).body.declaredBy.type, 'api_key');
    assert.equal((await asAdmin.post(`/orgs/${org.orgId}/emergencies`, { declaredBy: { id: 'u1', name: 'Ada' } })).body.declaredBy.type, 'user');
  });

  it('every admin route on an org outside the key subject answers 404 not_found, as for an unknown org', async () => {
    const mine = await createOrgTree(server.ctx);
    const theirs = await createOrgTree(server.ctx);
    const scoped = admin((await root.post('/admin-keys', { name: 'ent', subject: { type: 'enterprise', id: mine.enterpriseId } })).body.key);
    const unknown = '00000000-0000-4000-8000-000000000000';
    const category = { name: 'Flood', color: '#1565C0', severity: 3, responseLevel: 'shelter' };
    const user = { firstName: 'Grace', lastName: 'Hopper', email: 'grace@example.test' };
    const calls = (orgId: string): [string, () => Promise<ApiResponse>][] => [
      ['GET /orgs/{id}', () => scoped.get(`/orgs/${orgId}`)],
      ['GET /orgs/{id}/devices', () => scoped.get(`/orgs/${orgId}/devices`)],
      ['POST /orgs/{id}/devices', () => scoped.post(`/orgs/${orgId}/devices`, { name: 'Gym' })],
      ['POST /orgs/{id}/categories', () => scoped.post(`/orgs/${orgId}/categories`, category)],
      ['PATCH /orgs/{id}/categories/{c}', () => scoped.patch(`/orgs/${orgId}/categories/${unknown}`, { severity: 2 })],
      ['POST /orgs/{id}/users', () => scoped.post(`/orgs/${orgId}/users`, user)],
      ['PATCH /orgs/{id}/users/{u}', () => scoped.patch(`/orgs/${orgId}/users/${unknown}`, { status: 'active' })],
      ['POST /api-keys', () => scoped.post('/api-keys', { name: 'x', subject: { type: 'org', id: orgId }, permissions: ['read'] })],
      ['POST /webhooks', () => scoped.post('/webhooks', { url: `${receiver.url}/x`, subject: { type: 'org', id: orgId } })],
    ];
    for (const [route, call] of calls(theirs.orgId)) {
      const res = await call();
      assert.equal(res.status, 404, route);
      assert.equal(res.body.detail.error, 'not_found', route);
    }
    for (const [route, call] of calls(unknown)) {
      const res = await call();
      assert.equal(res.status, 404, route);
      assert.equal(res.body.detail.error, 'not_found', route);
    }
    assert.equal((await scoped.get(`/orgs/${mine.orgId}/devices`)).status, 200);
  });
});
