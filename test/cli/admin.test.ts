import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('admin CLI', () => {
  const database = freshDatabaseUrl();
  const env = { DATABASE_URL: database.url };
  const cli = (...args: string[]) => runCli([...args, '--json'], env);
  let ids: { partner: string; enterprise: string; org: string };

  before(async () => {
    assert.equal((await runCli(['migrate', '--json'], env)).code, 0);
  });
  after(() => database.drop());

  it('provisions a partner, enterprise, org, category and user', async () => {
    const partner = await cli('admin', 'partner', 'create', '--name', 'Acme Partner');
    assert.equal(partner.code, 0, partner.stderr);
    assert.match(partner.json.id, /^[0-9a-f-]{36}$/);
    const enterprise = await cli('admin', 'enterprise', 'create', '--partner', partner.json.id, '--name', 'Acme Schools');
    assert.equal(enterprise.code, 0, enterprise.stderr);
    const org = await cli('admin', 'org', 'create', '--enterprise', enterprise.json.id, '--name', 'North High');
    assert.equal(org.code, 0, org.stderr);
    ids = { partner: partner.json.id, enterprise: enterprise.json.id, org: org.json.id };
    const category = await cli(
      'admin',
      'category',
      'create',
      '--org',
      ids.org,
      '--name',
      'Lockdown',
      '--color',
      '#b71c1c',
      '--severity',
      '5',
      '--response-level',
      'lockdown',
    );
    assert.equal(category.code, 0, category.stderr);
    const user = await cli(
      'admin',
      'user',
      'create',
      '--org',
      ids.org,
      '--first-name',
      'Rosa',
      '--last-name',
      'Parks',
      '--email',
      'rosa@example.test',
      '--role',
      'responder',
    );
    assert.equal(user.code, 0, user.stderr);
  });

  it('mints a key that works over HTTP, then revokes and rotates keys', async () => {
    const created = await cli('admin', 'key', 'create', '--name', 'ops', '--subject', `org:${ids.org}`, '--permissions', 'read,write');
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.json.key, /^enk_live_[0-9a-f]{72}$/);
    assert.match(created.json.id, /^[0-9a-f-]{36}$/);

    const server: TestServer = await startTestServer({ DATABASE_URL: database.url });
    try {
      const api = client(server.base, created.json.key);
      const declared = await api.post(`/orgs/${ids.org}/emergencies`, { categoryName: 'lockdown' });
      assert.equal(declared.status, 201);
      assert.equal(declared.body.category.color, '#B71C1C');
      assert.deepEqual(declared.body.declaredBy, { type: 'api_key', id: created.json.id, name: 'ops' });
      const users = await api.get(`/orgs/${ids.org}/users`);
      assert.equal(users.body.items[0].role, 'responder');

      const rotated = await cli('admin', 'key', 'rotate', created.json.id);
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.match(rotated.json.key, /^enk_live_[0-9a-f]{72}$/);
      assert.ok(Date.parse(rotated.json.previousKeyExpiresAt) > Date.now() + 23 * 3600 * 1000);
      assert.equal((await client(server.base, rotated.json.key).get(`/orgs/${ids.org}/emergencies`)).status, 200);
      assert.equal((await api.get(`/orgs/${ids.org}/emergencies`)).status, 200, 'old key valid during grace');

      const revoked = await cli('admin', 'key', 'revoke', rotated.json.id);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.equal(revoked.json.status, 'inactive');
      let status = 200;
      for (let i = 0; i < 30 && status !== 401; i++) {
        await new Promise((r) => setTimeout(r, 200));
        status = (await client(server.base, rotated.json.key).get(`/orgs/${ids.org}/emergencies`)).status;
      }
      assert.equal(status, 401);

      const audit = await api.get(`/orgs/${ids.org}/audit-logs?eventCategory=api_key`);
      assert.deepEqual(audit.body.items.map((e: any) => e.eventType).sort(), ['api_key.created', 'api_key.revoked', 'api_key.rotated']);
    } finally {
      await server.stop();
    }
  });

  it('creates keys with allowed orgs and an expiry, and lists keys without secrets', async () => {
    const key = await cli(
      'admin',
      'key',
      'create',
      '--name',
      'narrow',
      '--subject',
      `enterprise:${ids.enterprise}`,
      '--permissions',
      'read',
      '--allowed-orgs',
      ids.org,
      '--active-until',
      '2030-01-01T00:00:00Z',
    );
    assert.equal(key.code, 0, key.stderr);
    const list = await cli('admin', 'key', 'list');
    const narrow = list.json.items.find((k: any) => k.id === key.json.id);
    assert.deepEqual(narrow.allowedOrgIds, [ids.org]);
    assert.equal(narrow.activeUntilDate, '2030-01-01T00:00:00.000Z');
    assert.deepEqual(narrow.permissions, ['read']);
    assert.ok(!list.stdout.includes(key.json.key.slice(17)));
  });

  it('fails with a clear message and a non-zero exit on bad arguments', async () => {
    const cases: [string[], RegExp][] = [
      [['admin', 'partner', 'create'], /--name is required/],
      [['admin', 'key', 'create', '--name', 'x', '--subject', 'org:nope', '--permissions', 'read'], /--subject/],
      [['admin', 'key', 'create', '--name', 'x', '--subject', `org:${ids.org}`, '--permissions', 'admin'], /--permissions/],
      [['admin', 'key', 'create', '--name', 'x', '--subject', `org:${ids.org}`, '--permissions', 'read', '--active-until', 'tomorrow'], /--active-until/],
      [['admin', 'key', 'create', '--name', 'x', '--subject', 'org:00000000-0000-4000-8000-000000000000', '--permissions', 'read'], /No org/],
      [['admin', 'category', 'create', '--org', ids.org, '--name', 'X', '--color', 'red', '--severity', '2', '--response-level', 'hold'], /color/],
      [['admin', 'category', 'create', '--org', ids.org, '--name', 'Y', '--color', '#000000', '--severity', '9', '--response-level', 'hold'], /severity/],
      [['admin', 'org', 'create', '--enterprise', '00000000-0000-4000-8000-000000000000', '--name', 'Z'], /No enterprise/],
      [['admin', 'key', 'revoke'], /expected ID/],
      [['admin', 'key', 'revoke', '00000000-0000-4000-8000-000000000000'], /No API key/],
      [['admin', 'frobnicate'], /unknown command/],
      [['admin', 'partner', 'create', '--name', 'x', '--bogus'], /bogus/],
    ];
    for (const [args, pattern] of cases) {
      const res = await cli(...args);
      assert.notEqual(res.code, 0, args.join(' '));
      assert.match(res.stderr, pattern, args.join(' '));
      assert.equal(res.stdout, '', args.join(' '));
    }
  });

  it('stops with a clear message on an invalid configuration', async () => {
    const res = await runCli(['migrate'], { DATABASE_URL: 'mysql://nope' });
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /DATABASE_URL/);
  });

  it('provisions a demo org with a working key', async () => {
    const demo = await cli('admin', 'demo');
    assert.equal(demo.code, 0, demo.stderr);
    for (const field of ['partnerId', 'enterpriseId', 'orgId', 'keyId', 'key', 'adminKeyId', 'adminKey']) assert.ok(demo.json[field], field);
    const server: TestServer = await startTestServer({ DATABASE_URL: database.url });
    try {
      const api = client(server.base, demo.json.key);
      const categories = await api.get(`/orgs/${demo.json.orgId}/emergencies/categories`);
      assert.ok(categories.body.items.length >= 5);
      assert.equal((await api.post(`/orgs/${demo.json.orgId}/emergencies`, { categoryName: 'Fire' })).status, 201);
      // The demo's admin key works on the admin API and sees the demo org.
      const admin = client(`${server.url}/api/admin/v1`, demo.json.adminKey);
      assert.equal((await admin.get(`/orgs/${demo.json.orgId}`)).body.name, 'Demo Org');
    } finally {
      await server.stop();
    }
  });

  it('mints admin keys scoped to the instance, a partner or an enterprise, lists and revokes them', async () => {
    const scoped = await cli('admin', 'admin-key', 'create', '--name', 'district ops', '--subject', `enterprise:${ids.enterprise}`);
    assert.equal(scoped.code, 0, scoped.stderr);
    assert.match(scoped.json.key, /^enk_adm_[0-9a-f]{72}$/);
    const instance = await cli('admin', 'admin-key', 'create', '--name', 'root', '--subject', 'instance');
    assert.equal(instance.code, 0, instance.stderr);
    const bad = await cli('admin', 'admin-key', 'create', '--name', 'x', '--subject', 'org:nope');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /instance, partner:ID or enterprise:ID/);
    const listed = await cli('admin', 'admin-key', 'list');
    assert.ok(listed.json.items.some((k: { adminKeyId: string; key?: string }) => k.adminKeyId === scoped.json.id && k.key === undefined));
    const revoked = await cli('admin', 'admin-key', 'revoke', scoped.json.id);
    assert.deepEqual(revoked.json, { id: scoped.json.id, status: 'inactive' });
  });
});
