import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/create-context.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { type ChildServer, spawnServer } from '../helpers/child-server.js';
import { freshDatabaseUrl, onDatabase, onPostgres } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, TEST_ENV } from '../helpers/server.js';

const BIN = resolve(import.meta.dirname, '../../bin/emergency-api.js');
const POOL_SIZE = 2;
const REQUESTS = 30;

describe('DB_POOL_SIZE', () => {
  it('0 is refused: serve exits 78 naming DB_POOL_SIZE', async () => {
    const database = freshDatabaseUrl();
    try {
      const run = spawnSync(process.execPath, [BIN, 'serve'], {
        env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: database.url, DB_POOL_SIZE: '0' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(run.status, 78, `exit code (stderr: ${run.stderr})`);
      assert.match(run.stderr, /^error: .*\n\s*DB_POOL_SIZE: /m);
      assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
    } finally {
      await database.drop();
    }
  });
});

describe('DB_POOL_SIZE on PostgreSQL: the connections one process holds', {
  skip: onPostgres ? false : 'a connection pool exists only on PostgreSQL (CI runs this suite there)',
  timeout: 120_000,
}, () => {
  // A database of its own, so that pg_stat_activity's datname tells this server's connections from other suites'.
  const name = `pool_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const url = new URL(process.env.DATABASE_URL ?? 'postgres://localhost/unused');
  url.pathname = `/${name}`;
  let server: ChildServer | undefined;
  let observer: pg.Client;
  let orgId = '';
  let key = '';

  before(async () => {
    await onDatabase(`create database ${name}`);
    const ctx = createContext(loadConfig({ ...TEST_ENV, DATABASE_URL: url.toString() }));
    try {
      await migrateToLatest(ctx.db);
      orgId = (await createOrgTree(ctx)).orgId;
      key = (await mintKey(ctx, { subjectType: 'org', subjectId: orgId })).key;
    } finally {
      await ctx.db.close();
    }
    observer = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await observer.connect();
    server = await spawnServer({ DATABASE_URL: url.toString(), DB_POOL_SIZE: String(POOL_SIZE) });
  });

  after(async () => {
    await server?.kill();
    await observer?.end();
    await onDatabase(`drop database if exists ${name} with (force)`);
  });

  /** The server's connections to its database now: pool connections, and LISTEN ones (named by the listener). */
  async function connections(): Promise<{ pool: number; listen: number }> {
    const { rows } = await observer.query<{ application_name: string }>(
      "select application_name from pg_stat_activity where datname = $1 and backend_type = 'client backend'",
      [name],
    );
    const listen = rows.filter((r) => r.application_name.startsWith('emergency-api listen')).length;
    return { pool: rows.length - listen, listen };
  }

  it(`serves ${REQUESTS} concurrent requests on at most ${POOL_SIZE} pool connections and its LISTEN connection`, async () => {
    const api = client(`${server!.url}/api/public/v1`, key);
    let done = false;
    const seen: { pool: number; listen: number }[] = [];
    // Watches the connections for as long as the requests run, so that one opened and closed meanwhile is counted too.
    const watching = (async () => {
      while (!done) {
        seen.push(await connections());
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const answers = await Promise.all(
      Array.from({ length: REQUESTS }, (_, i) =>
        i % 2 === 0 ? api.post(`/orgs/${orgId}/emergencies`, { description: `pool ${i}` }) : api.get(`/orgs/${orgId}/emergencies`),
      ),
    );
    done = true;
    await watching;
    // The pool keeps its connections open a while after use, so the burst's connections are still there.
    seen.push(await connections());

    assert.deepEqual(
      answers.map((a) => a.status),
      Array.from({ length: REQUESTS }, (_, i) => (i % 2 === 0 ? 201 : 200)),
    );
    const listed = await api.get(`/orgs/${orgId}/emergencies?limit=100`);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.items.length, REQUESTS / 2, 'every declare is listed');

    assert.equal(Math.max(...seen.map((s) => s.pool)), POOL_SIZE, 'the pool opened DB_POOL_SIZE connections, and never more');
    assert.ok(Math.max(...seen.map((s) => s.listen)) <= 1, 'one LISTEN connection at most');
    assert.equal(seen.at(-1)!.listen, 1, 'the LISTEN connection is held');
  });
});
