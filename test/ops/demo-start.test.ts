import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/connect.js';
import { freshDatabaseUrl } from '../helpers/db.js';

const BIN = resolve(import.meta.dirname, '../../bin/emergency-api.js');

interface DemoStart {
  child: ChildProcess;
  url: string;
  orgId: string;
  key: string;
  adminKey: string;
  stdout: () => string;
  stderr: () => string;
  stop(): Promise<number | null>;
}

/** `serve --demo` (what `npm start` runs) as a child process, once its banner is out. */
async function startDemo(env: Record<string, string>): Promise<DemoStart> {
  const child = spawn(process.execPath, [BIN, 'serve', '--demo'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const banner = await new Promise<RegExpExecArray>((done, fail) => {
    child.stdout!.on('data', (d) => {
      stdout += d;
      const found = /listening on (http:\S+)[\s\S]*demo org id : (\S+)[\s\S]*demo API key: (\S+)[\s\S]*admin key {3}: (\S+)[\s\S]*Declare an emergency/.exec(
        stdout,
      );
      if (found) done(found);
    });
    child.once('exit', (code) => fail(new Error(`serve --demo exited with ${code}: ${stderr}`)));
  });
  return {
    child,
    url: banner[1]!,
    orgId: banner[2]!,
    key: banner[3]!,
    adminKey: banner[4]!,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** The active demo keys: the org's API keys named "demo key" and the instance admin keys named "demo admin key". */
async function activeDemoKeys(url: string, orgId: string): Promise<{ api: number; admin: number }> {
  const handle = openDatabase(url);
  try {
    const api = await handle.db
      .selectFrom('api_keys')
      .select('id')
      .where('name', '=', 'demo key')
      .where('subject_id', '=', orgId)
      .where('status', '=', 'active')
      .execute();
    const admin = await handle.db.selectFrom('admin_keys').select('id').where('name', '=', 'demo admin key').where('status', '=', 'active').execute();
    return { api: api.length, admin: admin.length };
  } finally {
    await handle.close();
  }
}

const status = async (url: string, key: string) => (await fetch(url, { headers: { authorization: `Bearer ${key}` } })).status;

describe('npm start (serve --demo), twice on one database', { timeout: 180_000 }, () => {
  const database = freshDatabaseUrl();
  const attachments = mkdtempSync(join(tmpdir(), 'emergency-api-demo-'));
  const env = { DATABASE_URL: database.url, ATTACHMENT_STORE: `file:${attachments}` };
  const running: DemoStart[] = [];

  after(async () => {
    for (const demo of running) await demo.stop();
    await database.drop();
    rmSync(attachments, { recursive: true, force: true });
  });

  it('leaves one active demo API key and one demo admin key; the first start’s keys are refused after the second', async () => {
    const first = await startDemo(env);
    running.push(first);
    // A fresh database: the migrations in one line, on stderr and in the log, so that the keys stay in view.
    assert.match(first.stderr(), /^\d+ migrations applied \(0001_core … 00\d\d_\w+\)$/m);
    assert.match(first.stdout(), /"migrations":\["0001_core",.*"msg":"\d+ migrations applied/);
    // And the lines to paste into the shell the README's and docs' commands run in.
    assert.match(first.stdout(), new RegExp(`export BASE=${first.url}/api/public/v1 ORG=${first.orgId} KEY=${first.key}`));
    assert.match(first.stdout(), new RegExp(`export ADMIN=${first.url}/api/admin/v1 AK=${first.adminKey}`));
    assert.doesNotMatch(first.stdout(), /earlier demo keys/);
    assert.match(first.stdout(), /webhooks {4}: local receivers \(http:\/\/127\.0\.0\.1:\.\.\.\) accepted in demo mode/);
    assert.equal(await status(`${first.url}/api/public/v1/orgs/${first.orgId}/emergencies`, first.key), 200);
    assert.equal(await first.stop(), 0);

    const second = await startDemo(env);
    running.push(second);
    assert.equal(second.orgId, first.orgId, 'the demo org is reused');
    assert.notEqual(second.key, first.key);
    assert.doesNotMatch(second.stderr(), /migrations? \S+ applied/, 'nothing left to migrate');
    assert.match(second.stdout(), /earlier demo keys: 1 API key and 1 admin key revoked; only the keys above work/);

    assert.deepEqual(await activeDemoKeys(database.url, first.orgId), { api: 1, admin: 1 });
    const emergencies = `${second.url}/api/public/v1/orgs/${second.orgId}/emergencies`;
    assert.equal(await status(emergencies, first.key), 401, "the first start's API key is revoked");
    assert.equal(await status(`${second.url}/api/admin/v1/partners`, first.adminKey), 401, "the first start's admin key is revoked");
    assert.equal(await status(emergencies, second.key), 200);
    assert.equal(await status(`${second.url}/api/admin/v1/partners`, second.adminKey), 200);
  });

  it('accepts a local webhook receiver in demo mode, and refuses it when WEBHOOK_ALLOW_PRIVATE_TARGETS=false is set', async () => {
    for (const demo of running) await demo.stop();
    const subscribe = async (demo: DemoStart) =>
      fetch(`${demo.url}/api/admin/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${demo.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'http://127.0.0.1:9/hook', subject: { type: 'org', id: demo.orgId } }),
      });

    const lenient = await startDemo(env);
    running.push(lenient);
    assert.equal((await subscribe(lenient)).status, 201);
    await lenient.stop();

    const strict = await startDemo({ ...env, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' });
    running.push(strict);
    assert.match(strict.stdout(), /webhooks {4}: public https receivers only \(WEBHOOK_ALLOW_PRIVATE_TARGETS=false\)/);
    const refused = await subscribe(strict);
    assert.equal(refused.status, 422);
    assert.match(JSON.stringify(await refused.json()), /"invalid_url".*the scheme must be https/);
  });
});
