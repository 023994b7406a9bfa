import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';

const BIN = resolve(import.meta.dirname, '../../bin/emergency-api.js');

describe('structured logs of a running server', () => {
  const database = freshDatabaseUrl();
  let child: ChildProcess;
  const lines: any[] = [];
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
    child = spawn(process.execPath, [BIN, 'serve'], {
      env: { ...process.env, DATABASE_URL: database.url, PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_PER_KEY: '1000' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          lines.push(JSON.parse(line));
        } catch {
          lines.push({ raw: line });
        }
      }
    });
    const deadline = Date.now() + 30_000;
    while (!url && Date.now() < deadline) {
      const listening = lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('Server listening at http://127.0.0.1'));
      if (listening) url = listening.msg.slice('Server listening at '.length);
      else await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(url, 'server started');
  });

  after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
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
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    assert.equal(code, 0);
    assert.ok(Date.now() - started < 15_000);
    assert.ok(lines.some((l) => l.msg === 'shutting down'));
  });
});
