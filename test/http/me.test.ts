import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { createEnterprise, createOrg, createPartner } from '../../src/domain/orgs/service.js';
import { client } from '../helpers/http.js';
import { mintKey, startTestServer, type TestServer } from '../helpers/server.js';

/** GET /me on both APIs: the calling key, its permissions, subject and the organizations it covers, never another tenant's. */
describe('GET /me', () => {
  let server: TestServer;
  let admin: string;
  // Two tenants: partner A (enterprises A1 with two orgs, A2 with one) and partner B (one org).
  const ids = { partnerA: '', a1: '', a2: '', partnerB: '', b1: '' };
  const orgs: Record<string, string> = {};
  const me = (base: string, key?: string) => client(base, key).get('/me');
  let pub: string;

  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
    pub = server.base;
    admin = `${server.url}/api/admin/v1`;
    const op = operatorCaller();
    ids.partnerA = (await createPartner(server.ctx, op, { name: 'Partner A' })).partnerId;
    ids.partnerB = (await createPartner(server.ctx, op, { name: 'Partner B' })).partnerId;
    ids.a1 = (await createEnterprise(server.ctx, op, ids.partnerA, { name: 'Enterprise A1' })).enterpriseId;
    ids.a2 = (await createEnterprise(server.ctx, op, ids.partnerA, { name: 'Enterprise A2' })).enterpriseId;
    ids.b1 = (await createEnterprise(server.ctx, op, ids.partnerB, { name: 'Enterprise B1' })).enterpriseId;
    for (const [name, enterprise] of [
      ['Beta school', ids.a1],
      ['Alpha school', ids.a1],
      ['Gamma clinic', ids.a2],
      ['Other tenant', ids.b1],
    ] as const) {
      orgs[name] = (await createOrg(server.ctx, op, enterprise, { name })).orgId;
    }
  });
  after(() => server.close());

  it('an API key of one org: its id, name, permissions, subject and that org alone', async () => {
    const key = await mintKey(server.ctx, { subjectType: 'org', subjectId: orgs['Alpha school']!, name: 'front desk' });
    const res = await me(pub, key.key);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      keyId: key.id,
      name: 'front desk',
      kind: 'api_key',
      permissions: ['read', 'write'],
      subject: { type: 'org', id: orgs['Alpha school'] },
      orgs: [
        {
          orgId: orgs['Alpha school'],
          name: 'Alpha school',
          enterpriseId: ids.a1,
          enterpriseName: 'Enterprise A1',
          partnerId: ids.partnerA,
          partnerName: 'Partner A',
        },
      ],
      orgsTotal: 1,
      orgsNextCursor: null,
    });
  });

  it('reflects the permissions: a read-only key says read only', async () => {
    const key = await mintKey(server.ctx, { subjectType: 'org', subjectId: orgs['Gamma clinic']!, permissions: ['read'] });
    const res = await me(pub, key.key);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.permissions, ['read']);
  });

  it('a partner key lists its several orgs by name, never another partner’s; allowed orgs narrow the list', async () => {
    const key = await mintKey(server.ctx, { subjectType: 'partner', subjectId: ids.partnerA, permissions: ['read'] });
    const res = await me(pub, key.key);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.subject, { type: 'partner', id: ids.partnerA });
    assert.deepEqual(
      res.body.orgs.map((o: { name: string }) => o.name),
      ['Alpha school', 'Beta school', 'Gamma clinic'],
    );
    assert.equal(res.body.orgsTotal, 3);
    assert.equal(res.body.orgsNextCursor, null);

    const narrowed = await mintKey(server.ctx, { subjectType: 'partner', subjectId: ids.partnerA, allowedOrgIds: [orgs['Gamma clinic']!] });
    const body = (await me(pub, narrowed.key)).body;
    assert.deepEqual(
      body.orgs.map((o: { orgId: string }) => o.orgId),
      [orgs['Gamma clinic']],
    );
    assert.equal(body.orgsTotal, 1);

    const other = await mintKey(server.ctx, { subjectType: 'enterprise', subjectId: ids.b1 });
    const theirs = (await me(pub, other.key)).body;
    assert.deepEqual(
      theirs.orgs.map((o: { orgId: string }) => o.orgId),
      [orgs['Other tenant']],
    );
  });

  it('an instance admin key: kind admin_key, read and write, every org, on the admin API and on the public API', async () => {
    const key = await createAdminKey(server.ctx, operatorCaller(), { name: 'ops', subject: { type: 'instance' } });
    for (const base of [admin, pub]) {
      const res = await me(base, key.key);
      assert.equal(res.status, 200, base);
      assert.equal(res.body.keyId, key.adminKeyId);
      assert.equal(res.body.name, 'ops');
      assert.equal(res.body.kind, 'admin_key');
      assert.deepEqual(res.body.permissions, ['read', 'write']);
      assert.deepEqual(res.body.subject, { type: 'instance' });
      assert.deepEqual(
        res.body.orgs.map((o: { name: string }) => o.name),
        ['Alpha school', 'Beta school', 'Gamma clinic', 'Other tenant'],
      );
      assert.equal(res.body.orgsTotal, 4);
    }
  });

  it('a partner admin key lists the orgs beneath its partner only', async () => {
    const key = await createAdminKey(server.ctx, operatorCaller(), { name: 'partner B ops', subject: { type: 'partner', id: ids.partnerB } });
    const res = await me(admin, key.key);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.subject, { type: 'partner', id: ids.partnerB });
    assert.deepEqual(
      res.body.orgs.map((o: { orgId: string }) => o.orgId),
      [orgs['Other tenant']],
    );
    assert.equal(res.body.orgsTotal, 1);
  });

  it('401 without a key, with an unknown or revoked key, and for an API key on the admin API', async () => {
    for (const base of [pub, admin]) {
      const res = await me(base);
      assert.equal(res.status, 401, base);
      assert.equal(res.body.detail.error, 'unauthenticated');
      assert.equal((await me(base, `enk_live_0123abcd${'0'.repeat(64)}`)).status, 401);
    }
    const key = await mintKey(server.ctx, { subjectType: 'org', subjectId: orgs['Alpha school']! });
    assert.equal((await me(admin, key.key)).status, 401, 'the admin API takes admin keys only');
    const adminKey = await createAdminKey(server.ctx, operatorCaller(), { name: 'soon revoked', subject: { type: 'instance' } });
    assert.equal((await client(admin, adminKey.key).post(`/admin-keys/${adminKey.adminKeyId}/revoke`)).status, 200);
    // The key was verified (and cached) moments ago: its revocation is seen within the cache's few seconds.
    await waitFor(async () => (await me(admin, adminKey.key)).status === 401, 'the revoked admin key refused');
  });

  it('bounds the list: past 200 orgs, orgsNextCursor continues with GET /orgs', async () => {
    const partner = (await createPartner(server.ctx, operatorCaller(), { name: 'Large partner' })).partnerId;
    const enterprise = (await createEnterprise(server.ctx, operatorCaller(), partner, { name: 'Large enterprise' })).enterpriseId;
    for (let i = 0; i < 203; i++) await createOrg(server.ctx, operatorCaller(), enterprise, { name: `Site ${String(i).padStart(3, '0')}` });
    const key = await mintKey(server.ctx, { subjectType: 'enterprise', subjectId: enterprise, permissions: ['read'] });
    const res = await me(pub, key.key);
    assert.equal(res.status, 200);
    assert.equal(res.body.orgs.length, 200);
    assert.equal(res.body.orgsTotal, 203);
    assert.equal(res.body.orgs[199].name, 'Site 199');
    assert.equal(typeof res.body.orgsNextCursor, 'string');
    const rest = await client(pub, key.key).get(`/orgs?cursor=${encodeURIComponent(res.body.orgsNextCursor)}`);
    assert.equal(rest.status, 200);
    assert.deepEqual(
      rest.body.items.map((o: { name: string }) => o.name),
      ['Site 200', 'Site 201', 'Site 202'],
    );
  });
});

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}
