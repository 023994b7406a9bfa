import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freshDatabaseUrl } from '../helpers/db.js';

/**
 * Every ```sh, ```bash and ```shell block of README.md and docs/*.md, pasted into bash as a reader would:
 * in the repository root, after `npm start` (a fresh database, any free port), every block in order (README.md,
 * then docs/*.md by name) in one shell, which first runs the `export` lines npm start printed (BASE, ORG, KEY, ADMIN, AK,
 * EMERGENCY_API_URL and EMERGENCY_API_ADMIN_KEY) and nothing else: a block that set one of them to a
 * placeholder would break the blocks after it. 127.0.0.1:8080 (npm start's address) becomes the test server's.
 * Usage synopses are ```text blocks.
 *
 * It passes when bash (-e -u -o pipefail) runs them all, exits 0 within the time limit and leaves no file behind.
 * `curl` gets --fail-with-body unless the block already chose --fail: a command that shows an answer
 * prints an error body as readily as a success, so without it a 401 or a 404 would pass unnoticed.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const BLOCK_TIMEOUT_MS = 120_000;

interface Block {
  file: string;
  line: number;
  code: string;
}

/** The shell blocks of a page, fences indented inside a list item included (their indentation removed). */
function shellBlocks(file: string): Block[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j]!)) body.push(lines[j++]!.slice(indent));
    if (['sh', 'bash', 'shell'].includes(open[2]!)) blocks.push({ file, line: i + 1, code: body.join('\n') });
    i = j;
  }
  return blocks;
}

/** A block's commands without comments and blank lines. */
const commands = (code: string) =>
  code
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l && !l.startsWith('#'));

// `npm ci` and `npm test` cannot run inside the test suite (they reinstall and rerun it): the Setup block is
// checked against what CI runs instead, and `npm start` is what every other block runs against.
const SETUP = ['npm ci && npm start', 'npm test'];
const isSetup = (block: Block) => commands(block.code).join('\n') === SETUP.join('\n');

const ALL = PAGES.flatMap(shellBlocks);

/** The variables the pages use, which npm start prints as `export` lines. */
const PRINTED = { BASE: 1, ORG: 1, KEY: 1, ADMIN: 1, AK: 1, EMERGENCY_API_URL: 1, EMERGENCY_API_ADMIN_KEY: 1 };
const RUNNABLE = ALL.filter((b) => !isSetup(b));

interface DemoServer {
  child: ChildProcess;
  output: () => string;
  url: string;
  orgId: string;
  key: string;
  adminKey: string;
  /** The `export` lines it printed for the README's and docs' commands. */
  exports: string;
}

/** `npm start` on a fresh database and a free port; what it prints, parsed. */
async function npmStart(databaseUrl: string): Promise<DemoServer> {
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
  const banner = await new Promise<string>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`npm start printed no banner within 60 s:\n${output}`)), 60_000);
    child.stdout!.on('data', () => {
      // The banner ends with the ready-to-paste declare.
      if (/Declare an emergency:[\s\S]*-d '.*'\n/.test(output)) {
        clearTimeout(timer);
        done(output);
      }
    });
    child.once('exit', (code) => fail(new Error(`npm start exited (${code}):\n${output}`)));
  });
  const field = (pattern: RegExp) => {
    const m = pattern.exec(banner);
    assert.ok(m, `the banner shows ${pattern}:\n${banner}`);
    return m[1]!;
  };
  return {
    child,
    output: () => output,
    url: field(/^emergency-api is listening on (http:\/\/127\.0\.0\.1:\d+) /m),
    orgId: field(/^ {2}demo org id : ([0-9a-f-]{36})$/m),
    key: field(/^ {2}demo API key: (enk_live_[0-9a-f]+) /m),
    adminKey: field(/^ {2}admin key {3}: (enk_adm_[0-9a-f]+) /m),
    exports: [...banner.matchAll(/^ {2}(export .+)$/gm)].map((m) => m[1]).join('\n'),
  };
}

function stopGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}

const CURL_WITH_FAIL = `curl() {
  local arg
  for arg in "$@"; do
    case "$arg" in --fail | --fail-with-body | -[!-]*f*) command curl "$@"; return ;; esac
  done
  command curl --fail-with-body "$@"
}`;

interface Outcome {
  code: number | null;
  timedOut: boolean;
  output: string;
}

/** Runs a script with bash in its own process group, which is ended afterwards (background jobs included). */
async function runBash(script: string, env: Record<string, string | undefined>, timeoutMs = BLOCK_TIMEOUT_MS): Promise<Outcome> {
  const child = spawn('bash', ['-e', '-u', '-o', 'pipefail', '-c', `${CURL_WITH_FAIL}\n${script}`], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stopGroup(child);
  }, timeoutMs);
  const code = await new Promise<number | null>((done) => child.once('exit', (c) => done(c)));
  clearTimeout(timer);
  stopGroup(child);
  return { code, timedOut, output };
}

describe('shell blocks of README.md and docs/*.md, run as pasted', () => {
  const database = freshDatabaseUrl();
  const linked = mkdtempSync(join(tmpdir(), 'emergency-api-path-'));
  let server: DemoServer;
  let env: Record<string, string | undefined>;
  let shellEnv: Record<string, string | undefined>;
  const ran = new Map<Block, Outcome>();

  before(async () => {
    // The pages run `emergency-api` as installed; in a checkout, `npm link` puts a link to bin/emergency-api.js on
    // PATH, as this directory does.
    symlinkSync(join(ROOT, 'bin', 'emergency-api.js'), join(linked, 'emergency-api'));
    server = await npmStart(database.url);
    env = {
      ...process.env,
      PATH: `${linked}${delimiter}${process.env.PATH}`,
      // Remote admin commands, and local ones (DATABASE_URL), reach the server the blocks run against.
      DATABASE_URL: database.url,
      LOG_LEVEL: undefined,
      NODE_OPTIONS: undefined,
      BASE: `${server.url}/api/public/v1`,
      ORG: server.orgId,
      KEY: server.key,
      ADMIN: `${server.url}/api/admin/v1`,
      AK: server.adminKey,
      EMERGENCY_API_URL: server.url,
      EMERGENCY_API_ADMIN_KEY: server.adminKey,
    };
    // The pages' shells start without them: only npm start's export lines set them.
    shellEnv = Object.fromEntries(Object.entries(env).filter(([name]) => !(name in PRINTED)));
    assert.deepEqual(
      [...server.exports.matchAll(/\b([A-Z_]+)=/g)].map((m) => m[1]).sort(),
      Object.keys(PRINTED).sort(),
      'npm start prints an export of each variable the pages use',
    );
  });
  after(async () => {
    if (server) {
      stopGroup(server.child);
      await new Promise((r) => (server.child.exitCode === null && server.child.signalCode === null ? server.child.once('exit', r) : r(null)));
    }
    await database.drop();
    rmSync(linked, { recursive: true, force: true });
  });

  it('README: the Setup block is the two commands CI runs, and npm start prints the demo org, its keys and a working declare', async () => {
    const setup = ALL.filter(isSetup);
    assert.deepEqual(
      setup.map((b) => b.file),
      ['README.md'],
      'one Setup block, in the README',
    );
    assert.equal(ALL[0], setup[0], 'it is the first shell block of the README');
    const ci = commands(readFileSync(join(ROOT, '.ci/run'), 'utf8'));
    assert.ok(ci.includes('npm ci') && ci.includes('npm test'), '.ci/run installs with npm ci and tests with npm test');
    // The declare the banner offers, pasted as is, is answered 201.
    const declare = /^Declare an emergency:\n([\s\S]*?-d '.*')$/m.exec(server.output())![1]!;
    const { code, output } = await runBash(`${declare} -o /dev/null -w '%{http_code}'`, env);
    assert.equal(code, 0, output);
    assert.equal(output, '201');
  });

  it('every block of README.md and docs/*.md, in order, in one shell', { timeout: BLOCK_TIMEOUT_MS * RUNNABLE.length + 10_000 }, async () => {
    const timeout = BLOCK_TIMEOUT_MS * RUNNABLE.length;
    const present = new Set(readdirSync(ROOT));
    // Each block announces itself on stderr first, so that a failure names the block it stopped in.
    const script = RUNNABLE.map((b) => `echo "--- block ${b.file}:${b.line}" >&2\n${onThisServer(b.code, server)}`).join('\n');
    const outcome = await runBash(`${server.exports}\n${script}`, shellEnv, timeout);
    for (const block of RUNNABLE) ran.set(block, outcome);
    const reached = [...outcome.output.matchAll(/^--- block (\S+)$/gm)].at(-1)?.[1] ?? 'the first block';
    // Reported, not removed: the working tree is the reader's.
    const left = readdirSync(ROOT).filter((name) => !present.has(name));
    assert.ok(!outcome.timedOut, `still running after ${timeout / 1000} s, in block ${reached}:\n${outcome.output.slice(-3000)}`);
    assert.equal(outcome.code, 0, `exited ${outcome.code} in block ${reached}:\n${outcome.output.slice(-3000)}`);
    assert.equal(reached, `${RUNNABLE.at(-1)!.file}:${RUNNABLE.at(-1)!.line}`, 'every block ran');
    assert.deepEqual(left, [], 'no file left in the repository root');
  });

  it('README, Managing tenants over HTTP: the school it creates has its two base stations and its lockdown', async () => {
    const tenants = RUNNABLE.find((b) => b.file === 'README.md' && b.code.includes('"name":"Lincoln High"'));
    assert.ok(tenants, 'the README creates a tenant over the admin API');
    assert.equal(ran.get(tenants)?.code, 0, 'the block ran');
    // An admin key reads every org beneath its subject on the public API too.
    const asAdmin = { authorization: `Bearer ${server.adminKey}` };
    const orgs = await (await fetch(`${server.url}/api/public/v1/orgs?limit=200`, { headers: asAdmin })).json();
    const school = orgs.items.find((o: { name: string }) => o.name === 'Lincoln High');
    assert.ok(school, 'the org exists');
    const devices = await (await fetch(`${server.url}/api/public/v1/orgs/${school.orgId}/devices`, { headers: asAdmin })).json();
    assert.deepEqual(devices.items.map((d: { name: string }) => d.name).sort(), ['Gym', 'Library']);
    const emergencies = await (await fetch(`${server.url}/api/public/v1/orgs/${school.orgId}/emergencies`, { headers: asAdmin })).json();
    assert.deepEqual(
      emergencies.items.map((e: { category: { name: string } }) => e.category.name),
      ['Lockdown'],
    );
  });

  it('README walk-through: the emergency it declares ends resolved, with its timeline', async () => {
    const walkThrough = RUNNABLE.find((b) => b.file === 'README.md' && b.code.includes('/resolutions'));
    assert.ok(walkThrough, 'the README has a walk-through that resolves');
    const outcome = ran.get(walkThrough);
    assert.equal(outcome?.code, 0, 'the walk-through ran');
    // JSON answers end without a newline; the id the block echoes ends its line.
    const id = /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\n/.exec(outcome!.output)?.[1];
    assert.ok(id, 'the walk-through echoes the emergency id it declared');
    const res = await fetch(`${server.url}/api/public/v1/orgs/${server.orgId}/emergencies/${id}`, { headers: { authorization: `Bearer ${server.key}` } });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).status, 'resolved');
  });
});

/** The block with the test server's address in place of npm start's usual one (the test's runs on a free port). */
function onThisServer(code: string, server: DemoServer): string {
  const host = new URL(server.url).host;
  return code.replaceAll('127.0.0.1:8080', host).replaceAll('localhost:8080', host);
}
