import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { isDatabaseUnavailable } from '../../src/db/unavailable.js';
import { type ChildServer, freePort, spawnServer } from '../helpers/child-server.js';
import { freshDatabaseUrl, onPostgres } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { rawMcp } from '../helpers/mcp.js';
import { createOrgTree, mintKey } from '../helpers/server.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An org and a key on the database at `url`, made before the server starts. */
async function provision(url: string): Promise<{ orgId: string; key: string }> {
  const ctx = createContext(loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent' }));
  try {
    await migrateToLatest(ctx.db);
    const org = await createOrgTree(ctx);
    return { orgId: org.orgId, key: (await mintKey(ctx, { subjectType: 'org', subjectId: org.orgId })).key };
  } finally {
    await ctx.db.close();
  }
}

/** The server's log lines about the outage, and any that carry a stack or an unhandled error. */
function outageLines(server: ChildServer) {
  const unavailable = server.lines.filter((l) => typeof l.msg === 'string' && l.msg.includes('is unavailable; answering 503'));
  const stacks = server.lines.filter((l) => JSON.stringify(l).includes('"stack"') || l.msg === 'unhandled error');
  return { unavailable, stacks };
}

async function expectUnavailable(res: { status: number; body: any; headers: Headers }) {
  assert.equal(res.status, 503, JSON.stringify(res.body));
  assert.equal(res.body.detail.error, 'unavailable');
  assert.ok(Number(res.headers.get('retry-after')) >= 1);
}

describe('database unavailable: 503 with Retry-After, one log line per outage', {
  skip: onPostgres ? 'the SQLite variant (the PostgreSQL one runs below)' : false,
}, () => {
  const database = freshDatabaseUrl();
  let server: ChildServer;
  let api: ReturnType<typeof client>;
  let orgId = '';
  let key = '';

  before(async () => {
    ({ orgId, key } = await provision(database.url));
    server = await spawnServer({ DATABASE_URL: database.url, DB_STATEMENT_TIMEOUT_MS: '300' });
    api = client(`${server.url}/api/public/v1`, key);
  });
  after(async () => {
    await server?.kill();
    await database.drop();
  });

  it('SQLite locked by another process past the busy timeout', async () => {
    const path = `/orgs/${orgId}/emergencies`;
    const declared = await api.post(path, { description: 'before the lock' });
    assert.equal(declared.status, 201);
    const other = new BetterSqlite3(database.url.slice('sqlite:'.length));
    other.pragma('busy_timeout = 5000');
    other.exec('begin exclusive');
    try {
      for (let i = 0; i < 10; i++) await expectUnavailable(await api.post(path, { description: `locked ${i}` }));
      // Reads go on: WAL readers do not wait for the writer.
      assert.equal((await api.get(`${path}/${declared.body.emergencyId}`)).status, 200);
      const tool = await rawMcp(
        server.url,
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_emergency', arguments: { orgId } } },
        {
          authorization: `Bearer ${key}`,
        },
      );
      assert.equal(JSON.parse(tool.message.result.content[0].text).status, 503);
    } finally {
      other.exec('rollback');
      other.close();
    }
    assert.equal((await api.post(path, { description: 'after the lock' })).status, 201);
    const { unavailable, stacks } = outageLines(server);
    assert.equal(unavailable.length, 1, JSON.stringify(unavailable));
    assert.deepEqual(stacks, []);
  });
});

const PG_BIN = existsSync('/usr/lib/postgresql')
  ? readdirSync('/usr/lib/postgresql')
      .map((v) => `/usr/lib/postgresql/${v}/bin`)
      .find((d) => existsSync(`${d}/initdb`))
  : undefined;
const asPostgres = (args: string[]) => (process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...args] : args);

describe('PostgreSQL stopped and frozen: 503 with Retry-After, /readyz within 1 s, recovery', {
  skip: !onPostgres ? 'runs on the PostgreSQL pass' : !PG_BIN ? 'no PostgreSQL server binaries on this machine' : false,
}, () => {
  // A cluster of the test's own, on another port: the machine's main one is never stopped or frozen.
  let dir = '';
  let port = 0;
  let server: ChildServer;
  let api: ReturnType<typeof client>;
  let orgId = '';
  let key = '';
  let frozen: number[] = [];
  const run = (args: string[]) => {
    const [command, ...rest] = asPostgres(args);
    execFileSync(command!, rest, { stdio: 'ignore' });
  };
  const pgCtl = (...args: string[]) => run([`${PG_BIN}/pg_ctl`, '-D', join(dir, 'data'), ...args]);
  const start = () => pgCtl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, '-l', join(dir, 'log'), '-w', 'start');
  /**
   * Stops the postmaster first, then its children: a stopped postmaster forks no new backend, so none
   * can start between listing the children and stopping them. Returns every stopped process.
   */
  const freezePostgres = () => {
    const postmaster = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    spawnSync('kill', ['-STOP', String(postmaster)]);
    const children = spawnSync('pgrep', ['-P', String(postmaster)])
      .stdout.toString()
      .split('\n')
      .filter(Boolean)
      .map(Number);
    for (const pid of children) spawnSync('kill', ['-STOP', String(pid)]);
    return [postmaster, ...children];
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'emergency-pg-outage-'));
    chmodSync(dir, 0o777);
    port = await freePort();
    run([`${PG_BIN}/initdb`, '-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres']);
    start();
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    ({ orgId, key } = await provision(url));
    server = await spawnServer({ DATABASE_URL: url, DB_STATEMENT_TIMEOUT_MS: '1000', DB_CONNECT_TIMEOUT_MS: '1000' });
    api = client(`${server.url}/api/public/v1`, key);
  });

  after(async () => {
    for (const pid of frozen) spawnSync('kill', ['-CONT', String(pid)]);
    await server?.kill();
    try {
      pgCtl('-m', 'immediate', 'stop');
    } catch {
      /* already stopped */
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('a stopped server: every request is a quick 503, one log line, and service resumes when it is back', async () => {
    const path = `/orgs/${orgId}/emergencies`;
    const declared = await api.post(path, { description: 'before the stop' });
    assert.equal(declared.status, 201);
    pgCtl('-m', 'immediate', 'stop');
    const started = Date.now();
    for (let i = 0; i < 10; i++) {
      await expectUnavailable(await api.post(path, { description: `stopped ${i}` }));
      await expectUnavailable(await api.get(`${path}/${declared.body.emergencyId}`));
    }
    assert.ok(Date.now() - started < 20_000, 'refusals come fast');
    const tool = await rawMcp(
      server.url,
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_categories', arguments: { orgId } } },
      {
        authorization: `Bearer ${key}`,
      },
    );
    // Either the key check (HTTP 503) or the tool (a 503 tool error) meets the outage.
    assert.ok(tool.status === 503 || JSON.parse(tool.message.result.content[0].text).status === 503, tool.text);
    const ready = await fetch(`${server.url}/readyz`);
    assert.equal(ready.status, 503);

    start();
    const deadline = Date.now() + 20_000;
    let status = 0;
    while (Date.now() < deadline && status !== 201) {
      status = (await api.post(path, { description: 'after the restart' })).status;
      if (status !== 201) await sleep(200);
    }
    assert.equal(status, 201);
    const { unavailable, stacks } = outageLines(server);
    assert.equal(unavailable.length, 1, JSON.stringify(unavailable));
    assert.deepEqual(stacks, []);
  });

  it('a query in flight when PostgreSQL stops fails as unavailable, and the process lives on', async () => {
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const handle = openDatabase(url, { statementTimeoutMs: 30_000, connectTimeoutMs: 1000 });
    try {
      const running = sql`select pg_sleep(20)`.execute(handle.db);
      await sleep(300);
      pgCtl('-m', 'immediate', 'stop');
      await assert.rejects(running, (err) => isDatabaseUnavailable(err));
      // The broken connection was dropped, not handed out again.
      start();
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(handle.db);
      assert.equal(rows[0]!.one, 1);
    } finally {
      await handle.close();
    }
  });

  it('a frozen server: writes end in a 503 within the timeouts and /readyz answers within 1 s', async () => {
    const path = `/orgs/${orgId}/emergencies`;
    assert.equal((await api.post(path, { description: 'before the freeze' })).status, 201);
    frozen = freezePostgres();
    try {
      const began = Date.now();
      await expectUnavailable(await api.post(path, { description: 'frozen' }));
      assert.ok(Date.now() - began < 10_000, `a write waited ${Date.now() - began} ms`);
      const probe = Date.now();
      const ready = await fetch(`${server.url}/readyz`);
      assert.equal(ready.status, 503);
      assert.ok(Date.now() - probe < 3_000, `/readyz took ${Date.now() - probe} ms`);
    } finally {
      for (const pid of frozen) spawnSync('kill', ['-CONT', String(pid)]);
      frozen = [];
    }
    const deadline = Date.now() + 20_000;
    let status = 0;
    while (Date.now() < deadline && status !== 201) {
      status = (await api.post(path, { description: 'after the thaw' })).status;
      if (status !== 201) await sleep(200);
    }
    assert.equal(status, 201);
    assert.deepEqual(outageLines(server).stacks, []);
  });
});
