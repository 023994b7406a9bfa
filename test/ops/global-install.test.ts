import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { createOrgTree, mintKey, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The package as an operator gets it: `npm pack`, then `npm install -g` of the tarball into an empty prefix, the
 * command the README gives. The installed `emergency-api` then runs from a directory with no checkout: its version,
 * the admin CLI over a server's admin API, the device simulator, and the server itself on SQLite (the native
 * module built at install). It reuses the build `npm test` made, packing a copy of the tree so that the checkout's
 * dist/ stays in place for the suites running beside it; the install takes its packages from npm's cache when it can.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const run = promisify(execFile);

/** The environment of a shell outside npm: no lifecycle variables of the npm that may run this suite. */
function plainEnv(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  return { ...env, NODE_OPTIONS: undefined, NODE_PATH: undefined, LOG_LEVEL: 'silent', ...extra };
}

describe('npm install -g of the packed package', { timeout: 600_000 }, () => {
  const work = mkdtempSync(join(tmpdir(), 'emergency-api-global-'));
  const tree = join(work, 'tree');
  const prefix = join(work, 'prefix');
  /** Where every installed command runs: no package.json or node_modules here or above. */
  const cwd = join(work, 'elsewhere');
  const bin = join(prefix, 'bin', 'emergency-api');
  let tarball = '';
  let server: TestServer;
  let adminKeyFile = '';
  let child: ChildProcess | undefined;

  const installed = (args: string[], env: Record<string, string | undefined> = {}) =>
    run(bin, args, { cwd, env: plainEnv(env), timeout: 60_000 }).catch((error: { code?: number; stdout?: string; stderr?: string }) => {
      assert.fail(`emergency-api ${args.join(' ')} exited ${error.code}:\n${error.stdout}\n${error.stderr}`);
    });

  before(async () => {
    const stamp = join(ROOT, 'dist', '.build-stamp');
    assert.ok(existsSync(stamp) && statSync(stamp).mtimeMs >= newestMtime(join(ROOT, 'src')), 'dist/ is missing or older than src/: run npm run build');
    for (let dir = work; dir !== dirname(dir); dir = dirname(dir)) {
      assert.ok(!existsSync(join(dir, 'node_modules')) && !existsSync(join(dir, 'package.json')), `${dir} holds no package`);
    }
    // What `npm pack` reads: the manifest, the lock (prepack), the lifecycle scripts, and what `files` ships.
    for (const path of ['package.json', 'package-lock.json', 'README.md', 'LICENSE', 'bin', 'dist', 'scripts/prepare.js', 'scripts/prepack.js']) {
      cpSync(join(ROOT, path), join(tree, path), { recursive: true });
    }
    mkdirSync(cwd);
    const packed = await run('npm', ['pack', '--pack-destination', work], { cwd: tree, env: plainEnv(), timeout: 120_000 });
    tarball = join(work, packed.stdout.trim().split('\n').at(-1)!);
    assert.ok(existsSync(tarball), `npm pack wrote ${tarball}:\n${packed.stdout}\n${packed.stderr}`);
    await run('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--allow-scripts=better-sqlite3', '--no-fund', '--no-audit', tarball], {
      cwd,
      env: plainEnv(),
      // Compiling better-sqlite3 takes about a minute of one core; more on a busy machine.
      timeout: 480_000,
      maxBuffer: 64 * 1024 * 1024,
    });

    server = await startTestServer();
    const { key } = await createAdminKey(server.ctx, operatorCaller(), { name: 'installed cli', subject: { type: 'instance' } });
    adminKeyFile = join(work, 'admin-key');
    writeFileSync(adminKeyFile, key, { mode: 0o600 });
  });

  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child!.once('exit', r));
    }
    await server?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('the tarball ships the launcher, the build, the manifest and the pinned production versions only', async () => {
    const { stdout } = await run('tar', ['tzf', tarball]);
    const files = stdout
      .trim()
      .split('\n')
      .map((f) => f.replace(/^package\//, ''));
    assert.deepEqual(files.filter((f) => !f.startsWith('dist/')).sort(), [
      'LICENSE',
      'README.md',
      'bin/emergency-api.js',
      'npm-shrinkwrap.json',
      'package.json',
    ]);
    assert.ok(files.includes('dist/main.js') && files.includes('dist/console/index.html') && files.includes('dist/docs/standalone.js'));
    assert.deepEqual(
      files.filter((f) => f.endsWith('.map') || f.endsWith('.ts')),
      [],
      'no source maps or sources',
    );
    assert.ok(!existsSync(join(ROOT, 'npm-shrinkwrap.json')), 'the postpack script removes the shrinkwrap it wrote');
  });

  it(`installs ${manifest.name} with emergency-api on the prefix's PATH, and --version answers from anywhere`, async () => {
    assert.equal(manifest.name, '@emergency-api/server');
    const home = join(prefix, 'lib', 'node_modules', ...manifest.name.split('/'));
    assert.ok(!existsSync(join(home, 'src')), 'the installed package has no sources');
    const { stdout } = await installed(['--version']);
    assert.equal(stdout.trim(), `emergency-api ${manifest.version}`);
  });

  it('runs the admin CLI over a server admin API (EMERGENCY_API_URL and --admin-key-file)', async () => {
    const org = await createOrgTree(server.ctx);
    const { stdout } = await installed(['admin', 'org', 'list', '--enterprise', org.enterpriseId, '--admin-key-file', adminKeyFile, '--json'], {
      EMERGENCY_API_URL: server.url,
    });
    assert.ok(
      JSON.parse(stdout).items.some((o: { orgId: string }) => o.orgId === org.orgId),
      `the org the server holds is listed:\n${stdout}`,
    );
    const text = await installed(['admin', 'org', 'list', '--enterprise', org.enterpriseId], {
      EMERGENCY_API_URL: server.url,
      EMERGENCY_API_ADMIN_KEY: readFileSync(adminKeyFile, 'utf8'),
    });
    assert.match(text.stdout, new RegExp(org.orgId));
    assert.deepEqual(readdirSync(cwd), [], 'nothing is created where the command runs');
  });

  it('runs the device simulator, which prints the alert and stops on SIGTERM to its PID', async () => {
    const org = await createOrgTree(server.ctx);
    const device = await installed(['admin', 'device', 'create', '--org', org.orgId, '--name', 'Gym', '--admin-key-file', adminKeyFile, '--json'], {
      EMERGENCY_API_URL: server.url,
    });
    const { token } = JSON.parse(device.stdout);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const declared = await fetch(`${server.base}/orgs/${org.orgId}/emergencies`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ categoryName: 'Fire' }),
    });
    assert.equal(declared.status, 201);
    const { emergencyId } = await declared.json();

    const streamUrl = `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`;
    child = spawn(bin, ['device', 'simulate', '--url', streamUrl, '--token', token, '--after', '0', '--json'], {
      cwd,
      env: plainEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
    const frame = await new Promise<{ emergencyId?: string; event?: { emergencyId?: string } }>((done, fail) => {
      let lines = '';
      child!.stdout!.on('data', (chunk: Buffer) => {
        lines += chunk;
        for (const line of lines.split('\n').slice(0, -1)) {
          const parsed = JSON.parse(line);
          if (JSON.stringify(parsed).includes(emergencyId)) done(parsed);
        }
      });
      child!.once('exit', (code) => fail(new Error(`the simulator exited (${code}) before the alert:\n${output}`)));
    });
    assert.ok(frame, 'a frame of the declared emergency arrived');
    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    process.kill(child.pid!, 'SIGTERM');
    assert.equal(await exited, 0, `the simulator stops cleanly:\n${output}`);
  });

  it('serves the API on SQLite, its native module built by the install', async () => {
    const data = join(work, 'data');
    // A new database is started in a directory that exists (a missing one is refused as a likely typo).
    mkdirSync(data, { recursive: true });
    const env = plainEnv({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', DATABASE_URL: `sqlite:${join(data, 'emergency.db')}` });
    env.ATTACHMENT_STORE = `file:${join(data, 'attachments')}`;
    child = spawn(bin, ['serve'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
    const url = await new Promise<string>((done, fail) => {
      child!.stdout!.on('data', (chunk: Buffer) => {
        output += chunk;
        const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (listening) done(listening[1]!);
      });
      child!.once('exit', (code) => fail(new Error(`the installed server exited (${code}) before listening:\n${output}`)));
    });
    assert.equal((await fetch(`${url}/readyz`)).status, 200);
    assert.equal((await fetch(`${url}/console`)).status, 200);
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  });
});

function newestMtime(dir: string): number {
  return Math.max(
    0,
    ...readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newestMtime(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs)),
  );
}
