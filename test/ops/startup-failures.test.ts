import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { provisionDemo } from '../../src/cli/demo.js';
import { STARTUP_EXIT_CODES } from '../../src/cli/startup-failure.js';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/create-context.js';
import { openDatabase } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { freshDatabaseUrl } from '../helpers/db.js';

const BIN = resolve(import.meta.dirname, '../../bin/emergency-api.js');
const NOBODY = 65534;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `serve --demo` as `npm start` runs it (or `serve` with `args`), until it exits (or, if it starts after all, until it is killed). */
function serveDemo(env: Record<string, string>, as?: { uid: number; gid: number }, args = ['--demo']): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [BIN, 'serve', ...args], {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(as ? { uid: as.uid, gid: as.gid, cwd: tmpdir() } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      // A start that should have failed: stopped, and reported by its null exit code.
      if (stdout.includes('is listening on')) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

/** Every API key and admin key of the database with its status: a start that mints or revokes one changes it. */
async function keysOf(url: string): Promise<string[]> {
  const handle = openDatabase(url);
  try {
    const api = await handle.db.selectFrom('api_keys').select(['id', 'status']).execute();
    const admin = await handle.db.selectFrom('admin_keys').select(['id', 'status']).execute();
    return [...api.map((k) => `api ${k.id} ${k.status}`), ...admin.map((k) => `admin ${k.id} ${k.status}`)].sort();
  } finally {
    await handle.close();
  }
}

function assertExplained(run: Run, code: number, setting: RegExp): void {
  assert.equal(run.code, code, `exit code (stderr: ${run.stderr})`);
  const error = run.stderr.slice(run.stderr.indexOf('error: '));
  assert.match(error, /^error: /, run.stderr);
  assert.match(error, setting);
  assert.ok(error.trim().split('\n').length <= 2, `one or two lines: ${error}`);
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
  assert.doesNotMatch(run.stdout, /enk_live_|enk_adm_/, 'no key printed');
}

/** A loopback port held by another listener for the duration of a test. */
async function heldPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as { port: number }).port, server };
}

/** When this runs as root, the unprivileged user can run the executable from this checkout (for permission failures). */
const asNobody =
  process.getuid?.() === 0 &&
  spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(BIN)})`], { uid: NOBODY, gid: NOBODY }).status === 0;
const unprivilegedPortStart = (() => {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8'));
  } catch {
    return 1024;
  }
})();

describe('serve start-up failures', { timeout: 300_000 }, () => {
  const scratch = mkdtempSync(join(tmpdir(), 'emergency-api-startup-'));
  // Traversable by the unprivileged user of the permission tests, who may write only where a test opens a directory.
  chmodSync(scratch, 0o755);
  const aFile = join(scratch, 'a-file');
  writeFileSync(aFile, 'not a directory');
  // A database of the suite's dialect, migrated and with demo keys, so that a start that minted would show.
  const database = freshDatabaseUrl();
  let keysBefore: string[];

  before(async () => {
    const ctx = createContext(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }));
    try {
      await migrateToLatest(ctx.db);
      await provisionDemo(ctx);
    } finally {
      await ctx.db.close();
    }
    keysBefore = await keysOf(database.url);
    assert.equal(keysBefore.length, 2);
  });

  after(async () => {
    await database.drop();
    rmSync(scratch, { recursive: true, force: true });
  });

  const attachments = () => `file:${mkdtempSync(join(scratch, 'attachments-'))}`;

  it('gives each kind of failure its own exit code, apart from usage (2), configuration (78) and anything else (1)', () => {
    const codes = Object.values(STARTUP_EXIT_CODES);
    assert.equal(new Set(codes).size, codes.length);
    for (const reserved of [0, 1, 2, 78]) assert.ok(!codes.includes(reserved as never), `${reserved} is not reused`);
  });

  it('a role of a fleet on SQLite: refused before the database is opened, naming DATABASE_URL', async () => {
    const file = join(scratch, 'fleet', 'emergency.db');
    for (const [args, env] of [
      [['--role', 'gateway'], {}],
      [[], { ROLE: 'worker' }],
    ] as const) {
      const run = await serveDemo({ DATABASE_URL: `sqlite:${file}`, ...env }, undefined, [...args]);
      assertExplained(
        run,
        STARTUP_EXIT_CODES.roleNeedsPostgres,
        /^error: role (gateway|worker) \(--role or ROLE\) runs as one process of a fleet .*DATABASE_URL=sqlite:/,
      );
      assert.match(run.stderr, /DATABASE_URL=postgres:\/\//);
    }
    assert.deepEqual(
      readdirSync(scratch).filter((name) => name === 'fleet'),
      [],
      'no database created',
    );
    // --demo provisions through the REST API, which a gateway or worker does not serve.
    const demo = await serveDemo({ DATABASE_URL: database.url }, undefined, ['--demo', '--role', 'gateway']);
    assert.equal(demo.code, 2, demo.stderr);
    assert.match(demo.stderr, /--demo .*--role all or api/);
  });

  it('an invalid value: 78, naming the variable', async () => {
    assertExplained(await serveDemo({ DATABASE_URL: database.url, PORT: 'eighty' }), 78, /PORT/);
  });

  it('PostgreSQL refusing connections: names DATABASE_URL', async () => {
    const run = await serveDemo({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5999/emergency' });
    assertExplained(run, STARTUP_EXIT_CODES.databaseUnreachable, /DATABASE_URL=postgres:\/\/postgres@127\.0\.0\.1:5999\/emergency: cannot reach the database/);
  });

  it('PostgreSQL not answering within DB_CONNECT_TIMEOUT_MS: names DATABASE_URL', async () => {
    // Accepts connections and never answers, like a server behind a dropped route.
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (silent.address() as { port: number }).port;
      const run = await serveDemo({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/emergency`, DB_CONNECT_TIMEOUT_MS: '300' });
      assertExplained(run, STARTUP_EXIT_CODES.databaseUnreachable, /DATABASE_URL=.*cannot reach the database \(no answer within DB_CONNECT_TIMEOUT_MS=300\)/);
    } finally {
      silent.close();
    }
  });

  it('a PostgreSQL database that does not exist: names DATABASE_URL and suggests createdb', async () => {
    const run = await serveDemo({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/no_such_db_xyz' });
    assertExplained(
      run,
      STARTUP_EXIT_CODES.databaseMissing,
      /DATABASE_URL=.*"no_such_db_xyz" does not exist[\s\S]*createdb -h 127\.0\.0\.1 -p 5432 -U postgres no_such_db_xyz/,
    );
  });

  it('PostgreSQL refusing the credentials: names DATABASE_URL, never the password', async () => {
    const run = await serveDemo({ DATABASE_URL: 'postgres://no_such_role_xyz:s3cret-pw@127.0.0.1:5432/postgres' });
    assertExplained(run, STARTUP_EXIT_CODES.databaseCredentials, /DATABASE_URL=.*refused the credentials/);
    assert.doesNotMatch(run.stderr, /s3cret-pw/);
  });

  it("the SQLite file's directory is a file: names DATABASE_URL", async () => {
    const run = await serveDemo({ DATABASE_URL: `sqlite:${aFile}/emergency.db`, ATTACHMENT_STORE: attachments() });
    assertExplained(run, STARTUP_EXIT_CODES.dataDirectory, /DATABASE_URL=sqlite:.*a-file is a file, not a directory/);
  });

  it('a SQLite path whose directory does not exist (a typo): names DATABASE_URL and starts no new database', async () => {
    const missing = join(mkdtempSync(join(tmpdir(), 'typo-')), 'no-such-dir');
    const run = await serveDemo({ DATABASE_URL: `sqlite:${missing}/emergency.db`, ATTACHMENT_STORE: attachments() });
    assertExplained(run, STARTUP_EXIT_CODES.dataDirectory, /DATABASE_URL=sqlite:.*no-such-dir does not exist/);
    assert.equal(readdirSync(resolve(missing, '..')).length, 0, 'nothing was created');
  });

  it('a misspelt setting is warned about by name, with the setting it is probably meant to be', async () => {
    // Warned before the configuration is read: an invalid PORT then stops the start, before any database is opened.
    const run = await serveDemo({ DATABSE_URL: 'sqlite:/tmp/x.db', EMERGENCY_API_KEY: 'x', PORT: 'eighty' }, undefined, []);
    assert.equal(run.code, 78, run.stderr);
    assert.match(run.stderr, /warning: DATABSE_URL is set but is not a setting of emergency-api, so it is ignored \(did you mean DATABASE_URL\?\)/);
    assert.match(run.stderr, /warning: EMERGENCY_API_KEY is set but is not a setting of emergency-api/);
  });

  it('the attachment store is a file, or under one: names ATTACHMENT_STORE and mints nothing', async () => {
    for (const store of [`file:${aFile}`, `file:${aFile}/attachments`]) {
      const run = await serveDemo({ DATABASE_URL: database.url, ATTACHMENT_STORE: store });
      assertExplained(run, STARTUP_EXIT_CODES.dataDirectory, /^error: ATTACHMENT_STORE=file:.*a-file/);
    }
    assert.deepEqual(await keysOf(database.url), keysBefore);
  });

  it('HOST that does not resolve: names HOST and mints nothing', async () => {
    const run = await serveDemo({ DATABASE_URL: database.url, ATTACHMENT_STORE: attachments(), HOST: 'no.such.host.invalid' });
    assertExplained(run, STARTUP_EXIT_CODES.addressUnresolvable, /^error: HOST=no\.such\.host\.invalid: the name cannot be resolved/);
    assert.deepEqual(await keysOf(database.url), keysBefore);
  });

  it('PORT in use: names PORT, suggests another, and mints nothing', async () => {
    const held = await heldPort();
    try {
      const run = await serveDemo({ DATABASE_URL: database.url, ATTACHMENT_STORE: attachments(), PORT: String(held.port) });
      assertExplained(run, STARTUP_EXIT_CODES.portInUse, new RegExp(`^error: PORT=${held.port}: the port is already in use[\\s\\S]*choose another port`));
      assert.deepEqual(await keysOf(database.url), keysBefore);
    } finally {
      held.server.close();
    }
  });

  it('METRICS_PORT in use: names METRICS_PORT, not PORT, and mints nothing', async () => {
    const held = await heldPort();
    try {
      const run = await serveDemo({ DATABASE_URL: database.url, ATTACHMENT_STORE: attachments(), METRICS_PORT: String(held.port) });
      assertExplained(run, STARTUP_EXIT_CODES.portInUse, new RegExp(`^error: METRICS_PORT=${held.port}: the port is already in use`));
      assert.deepEqual(await keysOf(database.url), keysBefore);
    } finally {
      held.server.close();
    }
  });

  describe('as an unprivileged user', { skip: asNobody ? false : 'needs root, to run the server as an unprivileged user' }, () => {
    const nobody = { uid: NOBODY, gid: NOBODY };
    /** A directory the unprivileged user may use, with the suite's database's files (on SQLite) copied in. */
    const openDirectory = () => {
      const dir = mkdtempSync(join(scratch, 'open-'));
      chmodSync(dir, 0o777);
      return dir;
    };

    it('a privileged PORT: names PORT and HOST, and mints nothing', {
      skip: unprivilegedPortStart > 80 ? false : 'port 80 is not privileged here',
    }, async () => {
      let url = database.url;
      if (url.startsWith('sqlite:')) {
        // The suite's SQLite database, made writable for the unprivileged user.
        const dir = join(url.slice('sqlite:'.length), '..');
        chmodSync(dir, 0o777);
        for (const file of readdirSync(dir)) chmodSync(join(dir, file), 0o666);
        url = `sqlite:${join(dir, 'test.db')}`;
      }
      const run = await serveDemo({ DATABASE_URL: url, ATTACHMENT_STORE: `file:${openDirectory()}`, PORT: '80' }, nobody);
      assertExplained(run, STARTUP_EXIT_CODES.portPermission, /^error: PORT=80 on HOST=127\.0\.0\.1: no permission/);
      assert.deepEqual(await keysOf(database.url), keysBefore);
    });

    it("the SQLite file's directory not writable: names DATABASE_URL", async () => {
      const closed = join(scratch, 'closed');
      mkdirSync(closed, { mode: 0o755 });
      const run = await serveDemo({ DATABASE_URL: `sqlite:${closed}/emergency.db`, ATTACHMENT_STORE: `file:${openDirectory()}` }, nobody);
      assertExplained(run, STARTUP_EXIT_CODES.dataDirectory, /^error: DATABASE_URL=sqlite:.*closed\/emergency\.db: cannot create or write the database/);
    });

    it('the attachment store not writable: names ATTACHMENT_STORE', async () => {
      const closed = join(scratch, 'closed-attachments');
      mkdirSync(closed, { mode: 0o755 });
      const run = await serveDemo({ DATABASE_URL: `sqlite:${openDirectory()}/emergency.db`, ATTACHMENT_STORE: `file:${closed}` }, nobody);
      assertExplained(run, STARTUP_EXIT_CODES.dataDirectory, /^error: ATTACHMENT_STORE=file:.*closed-attachments is not writable \(EACCES\)/);
    });
  });
});
