import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { freshDatabaseUrl } from '../helpers/db.js';

const HINT = 'set WEBHOOK_ALLOW_PRIVATE_TARGETS=true to allow private targets (tests and local development only)';
const PING_FIELDS = ['id', 'outcome', 'responseCode', 'latencyMs', 'error'];

/** stderr without the line naming the database. */
const withoutDatabaseLine = (stderr: string) =>
  stderr
    .split('\n')
    .filter((line) => !/^using database |^\{"note":"using database /.test(line))
    .join('\n');

describe('CLI admin webhook test and create', () => {
  const database = freshDatabaseUrl();
  const env = { DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };
  let receiver: Server;
  let base: string;
  let partner: string;

  before(async () => {
    // 204 on /ok, 500 with a short body anywhere else.
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/ok') res.writeHead(204).end();
        else res.writeHead(500, { 'content-type': 'text/plain' }).end('receiver broke\nsecond line');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    assert.equal((await runCli(['migrate'], env)).code, 0);
    const created = await runCli(['admin', 'partner', 'create', '--name', 'Hooks Partner', '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    partner = created.json.id;
  });
  after(async () => {
    await new Promise((r) => receiver.close(r));
    await database.drop();
  });

  const createHook = async (path: string) => {
    const res = await runCli(['admin', 'webhook', 'create', '--subject', `partner:${partner}`, '--url', `${base}${path}`, '--json'], env);
    assert.equal(res.code, 0, res.stderr);
    return res.json.id as string;
  };

  it('exits 0 and prints the outcome when the ping succeeded', async () => {
    const id = await createHook('/ok');
    const [human, json] = await Promise.all([runCli(['admin', 'webhook', 'test', id], env), runCli(['admin', 'webhook', 'test', id, '--json'], env)]);
    assert.equal(human.code, 0, human.stderr);
    assert.equal(withoutDatabaseLine(human.stderr), '');
    assert.match(human.stdout, /^id: [0-9a-f-]{36}\n/);
    assert.match(human.stdout, /\noutcome: succeeded\n/);
    assert.match(human.stdout, /\nresponseCode: 204\n/);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(Object.keys(json.json), PING_FIELDS);
    assert.equal(json.json.outcome, 'succeeded');
  });

  it('exits 1 and prints the outcome when the ping failed', async () => {
    const id = await createHook('/fail');
    const [human, json] = await Promise.all([runCli(['admin', 'webhook', 'test', id], env), runCli(['admin', 'webhook', 'test', id, '--json'], env)]);
    assert.equal(human.code, 1);
    assert.match(human.stdout, /\noutcome: failed\n/);
    assert.match(human.stdout, /\nresponseCode: 500\n/);
    assert.equal(withoutDatabaseLine(human.stderr), 'error: the test ping failed: HTTP 500\n');

    // --json: the same object as on success, then the error on stderr and exit code 1.
    assert.equal(json.code, 1);
    assert.deepEqual(Object.keys(json.json), PING_FIELDS);
    assert.equal(json.json.outcome, 'failed');
    assert.equal(json.json.responseCode, 500);
    assert.deepEqual(JSON.parse(withoutDatabaseLine(json.stderr)), { error: 'the test ping failed: HTTP 500' });
  });

  it('exits 1 naming the error when the receiver cannot be reached', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const created = await runCli(['admin', 'webhook', 'create', '--subject', `partner:${partner}`, '--url', `http://127.0.0.1:${port}/gone`, '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    const res = await runCli(['admin', 'webhook', 'test', created.json.id], env);
    assert.equal(res.code, 1);
    assert.match(res.stdout, /\noutcome: failed\n/);
    assert.match(withoutDatabaseLine(res.stderr), /^error: the test ping failed: connection failed/);
  });

  it('prints the secret of a new subscription once, with a note', async () => {
    const res = await runCli(['admin', 'webhook', 'create', '--subject', `partner:${partner}`, '--url', `${base}/ok`], env);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^id: [0-9a-f-]{36}\nsecret: whsec_[A-Za-z0-9+/]{43}= {3}\(shown once\)\n$/);
  });

  it('names WEBHOOK_ALLOW_PRIVATE_TARGETS when a URL is refused only for being private, loopback or http', async () => {
    const production = { DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' };
    const create = (url: string, json = false) =>
      runCli(['admin', 'webhook', 'create', '--subject', `partner:${partner}`, '--url', url, ...(json ? ['--json'] : [])], production);
    const [loopback, privateIp, localName, plainHttp, asJson, badScheme, credentials] = await Promise.all([
      create('https://127.0.0.1:8443/hook'),
      create('https://10.0.0.5/hook'),
      create('https://hooks.localhost/hook'),
      create('http://hooks.example.com/hook'),
      create('https://192.168.1.20/hook', true),
      create('ftp://hooks.example.com/hook'),
      create('https://user:pw@hooks.example.com/hook'),
    ]);
    for (const res of [loopback, privateIp, localName, plainHttp, asJson, badScheme, credentials]) {
      assert.equal(res.code, 1, res.stdout);
      assert.equal(res.stdout, '');
    }
    assert.match(withoutDatabaseLine(loopback.stderr), /^error: Invalid webhook URL: The address 127\.0\.0\.1 is a non-public address \(loopback\); /);
    for (const res of [loopback, privateIp, localName, plainHttp]) assert.ok(res.stderr.endsWith(`; ${HINT}\n`), res.stderr);
    assert.match(JSON.parse(withoutDatabaseLine(asJson.stderr)).error, /non-public address \(private\); set WEBHOOK_ALLOW_PRIVATE_TARGETS=true/);
    // Refused whatever the setting: no hint.
    assert.equal(withoutDatabaseLine(badScheme.stderr), 'error: Invalid webhook URL: the scheme must be https.\n');
    assert.doesNotMatch(credentials.stderr, /WEBHOOK_ALLOW_PRIVATE_TARGETS/);
  });
});
