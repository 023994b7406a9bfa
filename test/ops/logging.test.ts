import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { type ChildServer, spawnServer } from '../helpers/child-server.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';

describe('structured logs of a running server', () => {
  const database = freshDatabaseUrl();
  let server: ChildServer;
  let lines: any[] = [];
  let url = '';
  let key = '';
  let keyId = '';
  let orgId = '';

  before(async () => {
    const ctx = createContext(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }));
    await migrateToLatest(ctx.db);
    const org = await createOrgTree(ctx);
    ({ key, id: keyId } = await mintKey(ctx, { subjectType: 'org', subjectId: org.orgId }));
    orgId = org.orgId;
    await ctx.db.close();
    server = await spawnServer({ DATABASE_URL: database.url });
    url = server.url;
    lines = server.lines;
  });

  after(async () => {
    await server.kill();
    await database.drop();
  });

  it('writes JSON lines with request id, key id and org id, and never the key or the body', async () => {
    const api = client(`${url}/api/public/v1`, key);
    const res = await api.post(`/orgs/${orgId}/emergencies`, { description: 'secret-description-text' }, { 'x-request-id': 'log-test-1' });
    assert.equal(res.status, 201);
    await new Promise((r) => setTimeout(r, 300));
    const completed = lines.find((l) => l.reqId === 'log-test-1' && l.msg === 'request completed');
    assert.ok(completed, JSON.stringify(lines.slice(-5)));
    assert.equal(completed.keyId, keyId);
    assert.equal(completed.orgId, orgId);
    assert.equal(completed.res.statusCode, 201);
    assert.ok(typeof completed.responseTime === 'number');
    const all = lines.map((l) => JSON.stringify(l)).join('\n');
    assert.ok(!all.includes(key.slice(9)), 'no key material in logs');
    assert.ok(!all.includes('secret-description-text'), 'no request bodies in logs');
  });

  it('shuts down on SIGTERM within the grace period', async () => {
    const started = Date.now();
    server.child.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => server.child.once('exit', (c) => r(c)));
    assert.equal(code, 0);
    assert.ok(Date.now() - started < 15_000);
    assert.ok(lines.some((l) => l.msg === 'shutting down'));
  });
});

describe('log format and CORS', () => {
  const database = freshDatabaseUrl();
  let key = '';
  let orgId = '';

  before(async () => {
    const ctx = createContext(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }));
    await migrateToLatest(ctx.db);
    const org = await createOrgTree(ctx);
    ({ key } = await mintKey(ctx, { subjectType: 'org', subjectId: org.orgId }));
    orgId = org.orgId;
    await ctx.db.close();
  });
  after(() => database.drop());

  it('writes readable lines, not JSON, with LOG_FORMAT=pretty (what a terminal gets by default)', async () => {
    const server = await spawnServer({ DATABASE_URL: database.url, LOG_FORMAT: 'pretty' });
    try {
      const res = await client(`${server.url}/api/public/v1`, key).get(`/orgs/${orgId}/emergencies`, { 'x-request-id': 'pretty-1' });
      assert.equal(res.status, 200);
      await new Promise((r) => setTimeout(r, 500));
      const text = server.lines.map((l) => l.raw).join('\n');
      assert.match(text, /request completed/);
      assert.match(text, /reqId.*"pretty-1"/);
      assert.ok(
        server.lines.every((l) => l.raw !== undefined),
        'no JSON line',
      );
    } finally {
      await server.kill();
    }
  });

  it('sends no CORS headers unless CORS_ORIGINS names the origin', async () => {
    const closed = await spawnServer({ DATABASE_URL: database.url });
    try {
      const preflight = await fetch(`${closed.url}/api/public/v1/orgs/${orgId}/emergencies`, {
        method: 'OPTIONS',
        headers: { origin: 'https://console.example.com', 'access-control-request-method': 'POST' },
      });
      assert.equal(preflight.headers.get('access-control-allow-origin'), null);
    } finally {
      await closed.kill();
    }
    const open = await spawnServer({ DATABASE_URL: database.url, CORS_ORIGINS: 'https://console.example.com' });
    try {
      const preflight = await fetch(`${open.url}/api/public/v1/orgs/${orgId}/emergencies`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://console.example.com',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,idempotency-key',
        },
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://console.example.com');
      assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /Idempotency-Key/i);
      const read = await fetch(`${open.url}/api/public/v1/orgs/${orgId}/emergencies`, {
        headers: { origin: 'https://console.example.com', authorization: `Bearer ${key}` },
      });
      assert.equal(read.status, 200);
      assert.equal(read.headers.get('access-control-allow-origin'), 'https://console.example.com');
      assert.match(read.headers.get('access-control-expose-headers') ?? '', /X-Request-Id/);
      const stranger = await fetch(`${open.url}/api/public/v1/orgs/${orgId}/emergencies`, {
        headers: { origin: 'https://evil.example', authorization: `Bearer ${key}` },
      });
      assert.equal(stranger.headers.get('access-control-allow-origin'), null);
    } finally {
      await open.kill();
    }
  });
});
