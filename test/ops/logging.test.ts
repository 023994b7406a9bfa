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
