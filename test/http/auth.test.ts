import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { revokeApiKey, rotateApiKey } from '../../src/domain/keys/service.js';
import { createOrg } from '../../src/domain/orgs/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** Polls until the request answers the expected status (key checks are cached for a few seconds). */
async function eventually(fn: () => Promise<number>, expected: number, withinMs = 5000): Promise<number> {
  const deadline = Date.now() + withinMs;
  let status = await fn();
  while (status !== expected && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    status = await fn();
  }
  return status;
}

describe('authentication and tenancy', () => {
  let server: TestServer;
  let a: OrgFixture;
  let aSibling: string;
  let b: OrgFixture;
  let aKey: string;
  let emergencyOfB: string;

  before(async () => {
    server = await startTestServer();
    a = await createOrgTree(server.ctx);
    aSibling = (await createOrg(server.ctx, operatorCaller(), a.enterpriseId, { name: 'Sibling' })).orgId;
    b = await createOrgTree(server.ctx);
    aKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId })).key;
    const bKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: b.orgId })).key;
    emergencyOfB = (await client(server.base, bKey).post(`/orgs/${b.orgId}/emergencies`, {})).body.emergencyId;
  });
  after(() => server.close());

  describe('401 unauthenticated', () => {
    const headersCases: [string, Record<string, string>][] = [
      ['no header', {}],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
      ['wrong prefix', { authorization: `Bearer enk_test_${'a'.repeat(72)}` }],
      ['upper-case hex', { authorization: `Bearer enk_live_${'A'.repeat(72)}` }],
      ['too short', { authorization: `Bearer enk_live_${'a'.repeat(71)}` }],
      ['unknown key', { authorization: `Bearer enk_live_${'0'.repeat(72)}` }],
    ];
    for (const [name, headers] of headersCases) {
      it(`refuses ${name}`, async () => {
        const res = await client(server.base).get(`/orgs/${a.orgId}/emergencies`, headers);
        assert.equal(res.status, 401);
        assert.equal(res.body.detail.error, 'unauthenticated');
        assert.equal(res.headers.get('www-authenticate'), 'Bearer');
        assert.ok(res.headers.get('x-request-id'));
      });
    }

    it('refuses a known key id with a wrong secret', async () => {
      const wrong = aKey.slice(0, 17) + (aKey[17] === 'a' ? 'b' : 'a') + aKey.slice(18);
      const res = await client(server.base, wrong).get(`/orgs/${a.orgId}/emergencies`);
      assert.equal(res.status, 401);
    });

    it('refuses an expired key', async () => {
      const past = (await mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId, activeUntil: '2020-01-01T00:00:00.000Z' })).key;
      assert.equal((await client(server.base, past).get(`/orgs/${a.orgId}/emergencies`)).status, 401);
      const soon = (await mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId, activeUntil: new Date(Date.now() + 1500).toISOString() })).key;
      const api = client(server.base, soon);
      assert.equal((await api.get(`/orgs/${a.orgId}/emergencies`)).status, 200);
      await new Promise((r) => setTimeout(r, 1600));
      assert.equal((await api.get(`/orgs/${a.orgId}/emergencies`)).status, 401);
    });

    it('refuses a revoked key within 5 seconds', async () => {
      const { id, key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId });
      const api = client(server.base, key);
      assert.equal((await api.get(`/orgs/${a.orgId}/emergencies`)).status, 200);
      await revokeApiKey(server.ctx, operatorCaller(), id);
      assert.equal(await eventually(async () => (await api.get(`/orgs/${a.orgId}/emergencies`)).status, 401), 401);
    });

    it('keeps a rotated key valid through its grace period and then refuses it', async () => {
      const { id, key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId, permissions: ['read'] });
      const rotated = await rotateApiKey(server.ctx, operatorCaller(), id, 1500);
      assert.match(rotated.key, /^enk_live_[0-9a-f]{72}$/);
      const oldApi = client(server.base, key);
      const newApi = client(server.base, rotated.key);
      assert.equal((await newApi.get(`/orgs/${a.orgId}/emergencies`)).status, 200);
      assert.equal((await newApi.post(`/orgs/${a.orgId}/emergencies`, {})).status, 403, 'the successor keeps the same grants');
      assert.equal((await oldApi.get(`/orgs/${a.orgId}/emergencies`)).status, 200);
      await new Promise((r) => setTimeout(r, 1600));
      assert.equal((await oldApi.get(`/orgs/${a.orgId}/emergencies`)).status, 401);
      assert.equal((await newApi.get(`/orgs/${a.orgId}/emergencies`)).status, 200);
    });
  });

  describe('403 and cross-tenant access', () => {
    it("refuses another org's id in the path with org_not_covered", async () => {
      const api = client(server.base, aKey);
      for (const [method, path, body] of [
        ['GET', `/orgs/${b.orgId}/emergencies`, undefined],
        ['POST', `/orgs/${b.orgId}/emergencies`, {}],
        ['GET', `/orgs/${b.orgId}/emergencies/${emergencyOfB}`, undefined],
        ['PATCH', `/orgs/${b.orgId}/emergencies/${emergencyOfB}`, { categoryName: 'Fire' }],
        ['POST', `/orgs/${b.orgId}/emergencies/${emergencyOfB}/resolutions`, {}],
        ['GET', `/orgs/${b.orgId}/emergencies/categories`, undefined],
        ['GET', `/orgs/${b.orgId}/users`, undefined],
        ['GET', `/orgs/${b.orgId}/audit-logs`, undefined],
        ['GET', `/orgs/${aSibling}/emergencies`, undefined],
      ] as const) {
        const res = await api.call(method, path, body);
        assert.equal(res.status, 403, `${method} ${path}`);
        assert.equal(res.body.detail.error, 'org_not_covered');
      }
      assert.equal((await client(server.base, aKey).get(`/orgs/${b.orgId}/emergencies/${emergencyOfB}`)).status, 403);
    });

    it('answers an org that does not exist exactly like one not covered', async () => {
      const res = await client(server.base, aKey).get('/orgs/6f1d1c2e-2b7a-4c39-9d3e-0a4b5c6d7e8f/emergencies');
      assert.equal(res.status, 403);
      assert.equal(res.body.detail.error, 'org_not_covered');
    });

    it("answers another org's emergency id under one's own org with 404", async () => {
      const api = client(server.base, aKey);
      for (const [method, suffix, body] of [
        ['GET', '', undefined],
        ['PATCH', '', { categoryName: 'Fire' }],
        ['POST', '/resolutions', {}],
      ] as const) {
        const res = await api.call(method, `/orgs/${a.orgId}/emergencies/${emergencyOfB}${suffix}`, body);
        assert.equal(res.status, 404, method + suffix);
        assert.equal(res.body.detail.error, 'emergency_not_found');
      }
      const still = await client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: b.orgId })).key).get(
        `/orgs/${b.orgId}/emergencies/${emergencyOfB}`,
      );
      assert.equal(still.body.status, 'declared');
    });

    it('lets an enterprise key reach every org of its enterprise and no other', async () => {
      const api = client(server.base, (await mintKey(server.ctx, { subjectType: 'enterprise', subjectId: a.enterpriseId })).key);
      assert.equal((await api.get(`/orgs/${a.orgId}/emergencies`)).status, 200);
      assert.equal((await api.get(`/orgs/${aSibling}/emergencies`)).status, 200);
      assert.equal((await api.get(`/orgs/${b.orgId}/emergencies`)).status, 403);
    });

    it('lets a partner key reach orgs of its tree only', async () => {
      const api = client(server.base, (await mintKey(server.ctx, { subjectType: 'partner', subjectId: a.partnerId })).key);
      assert.equal((await api.post(`/orgs/${aSibling}/emergencies`, {})).status, 201);
      const outside = await api.get(`/orgs/${b.orgId}/emergencies`);
      assert.equal(outside.status, 403);
      assert.equal(outside.body.detail.error, 'org_not_covered');
    });

    it('narrows a key to its allowedOrgIds', async () => {
      const api = client(server.base, (await mintKey(server.ctx, { subjectType: 'enterprise', subjectId: a.enterpriseId, allowedOrgIds: [aSibling] })).key);
      assert.equal((await api.get(`/orgs/${aSibling}/emergencies`)).status, 200);
      const res = await api.get(`/orgs/${a.orgId}/emergencies`);
      assert.equal(res.status, 403);
      assert.equal(res.body.detail.error, 'org_not_covered');
      // allowedOrgIds never widens the subject: such a key cannot even be minted (extensions §13).
      await assert.rejects(
        mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId, allowedOrgIds: [b.orgId] }),
        /allowedOrgIds\.0: is not an organization/,
      );
      // Nor does a list stored before that rule.
      const legacy = await mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId, allowedOrgIds: [a.orgId] });
      await server.ctx.db.db
        .updateTable('api_keys')
        .set({ allowed_org_ids: JSON.stringify([b.orgId]) })
        .where('id', '=', legacy.id)
        .execute();
      assert.equal((await client(server.base, legacy.key).get(`/orgs/${b.orgId}/emergencies`)).status, 403, 'allowedOrgIds never widens the subject');
    });

    it('refuses operations needing a permission the key lacks with permission_denied', async () => {
      const reader = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId, permissions: ['read'] })).key);
      const writer = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId, permissions: ['write'] })).key);
      const declared = await writer.post(`/orgs/${a.orgId}/emergencies`, {});
      assert.equal(declared.status, 201);
      for (const res of [
        await reader.post(`/orgs/${a.orgId}/emergencies`, {}),
        await reader.patch(`/orgs/${a.orgId}/emergencies/${declared.body.emergencyId}`, { categoryName: 'Fire' }),
        await reader.post(`/orgs/${a.orgId}/emergencies/${declared.body.emergencyId}/resolutions`, {}),
        await writer.get(`/orgs/${a.orgId}/emergencies`),
        await writer.get(`/orgs/${a.orgId}/emergencies/${declared.body.emergencyId}`),
        await writer.get(`/orgs/${a.orgId}/users`),
      ]) {
        assert.equal(res.status, 403);
        assert.equal(res.body.detail.error, 'permission_denied');
      }
      assert.equal((await reader.get(`/orgs/${a.orgId}/emergencies/${declared.body.emergencyId}`)).status, 200);
    });

    it('answers a non-UUID org id with 422 on path.org_id', async () => {
      const res = await client(server.base, aKey).get('/orgs/not-a-uuid/emergencies');
      assert.equal(res.status, 422);
      assert.deepEqual(res.body.detail[0].loc, ['path', 'org_id']);
    });
  });

  it('records lastUsedAt for a key that was used', async () => {
    const { id, key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId });
    await client(server.base, key).get(`/orgs/${a.orgId}/emergencies`);
    let row: { last_used_at: string | null } | undefined;
    for (let i = 0; i < 20; i++) {
      row = await server.ctx.db.db.selectFrom('api_keys').select('last_used_at').where('id', '=', id).executeTakeFirstOrThrow();
      if (row.last_used_at) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(row?.last_used_at);
  });

  it('stores only a SHA-256 digest of keys', async () => {
    const { id, key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: a.orgId });
    const row = await server.ctx.db.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.ok(!JSON.stringify(row).includes(key.slice(17)));
    assert.match(row.secret_hash, /^[0-9a-f]{64}$/);
  });
});
