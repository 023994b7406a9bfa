import { type Receiver, startReceiver } from '../delivery/helpers.js';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { freePort } from '../helpers/child-server.js';
import { runCli } from '../helpers/cli.js';
import { client } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const emptyDir = () => mkdtempSync(join(tmpdir(), 'emergency-api-cli-'));

/** Where the tests keep key files: apart from the directory the commands run in, which must stay empty. */
const keyDir = emptyDir();
let keyFiles = 0;
/** A file holding `text`, readable by its owner only, as an operator keeps an admin key. */
function secretFile(text: string): string {
  const path = join(keyDir, `admin-key-${++keyFiles}`);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

describe('admin CLI over the admin API (EMERGENCY_API_URL, EMERGENCY_API_ADMIN_KEY)', () => {
  let server: TestServer;
  let adminKey: { adminKeyId: string; key: string };
  let receiver: Receiver;
  let receiverUrl: string;
  /** Where every command runs: an empty directory, which must stay empty (no database created). */
  const cwd = emptyDir();
  // No DATABASE_URL: the commands must not need one.
  const remoteEnv = () => ({ DATABASE_URL: undefined, EMERGENCY_API_URL: server.url, EMERGENCY_API_ADMIN_KEY: adminKey.key });
  const run = (args: string[], env: Record<string, string | undefined> = remoteEnv()) => runCli(args, env, { cwd });
  const cli = async (...args: string[]) => {
    const res = await run([...args, '--json']);
    assert.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}`);
    assert.equal(res.stderr, '', `${args.join(' ')}: nothing on stderr in remote mode`);
    return res.json;
  };
  const ids: Record<string, string> = {};

  before(async () => {
    server = await startTestServer();
    adminKey = await createAdminKey(server.ctx, operatorCaller(), { name: 'remote cli', subject: { type: 'instance' } });
    receiver = await startReceiver();
    receiverUrl = `${receiver.url}/hook`;
  });
  after(async () => {
    await receiver.close();
    await server.close();
    rmSync(cwd, { recursive: true, force: true });
    rmSync(keyDir, { recursive: true, force: true });
  });

  it('provisions partner, enterprise, org, category and user, and lists them', async () => {
    ids.partner = (await cli('admin', 'partner', 'create', '--name', 'Remote Partner')).id;
    ids.enterprise = (await cli('admin', 'enterprise', 'create', '--partner', ids.partner, '--name', 'Remote Schools')).id;
    ids.org = (await cli('admin', 'org', 'create', '--enterprise', ids.enterprise, '--name', 'Remote High')).id;
    for (const id of Object.values(ids)) assert.match(id, UUID);
    const category = await cli(
      'admin',
      'category',
      'create',
      '--org',
      ids.org,
      '--name',
      'Lockdown',
      '--color',
      '#b71c1c',
      '--severity',
      '5',
      '--response-level',
      'lockdown',
    );
    assert.deepEqual(Object.keys(category), ['id']);
    const user = await cli(
      'admin',
      'user',
      'create',
      '--org',
      ids.org,
      '--first-name',
      'Rosa',
      '--last-name',
      'Parks',
      '--email',
      'rosa@example.test',
      '--role',
      'responder',
    );
    assert.match(user.id, UUID);

    const [partners, enterprises, orgs] = await Promise.all([
      cli('admin', 'partner', 'list'),
      cli('admin', 'enterprise', 'list', '--partner', ids.partner),
      cli('admin', 'org', 'list', '--enterprise', ids.enterprise),
    ]);
    assert.ok(partners.items.some((p: { partnerId: string; name: string }) => p.partnerId === ids.partner && p.name === 'Remote Partner'));
    assert.deepEqual(
      enterprises.items.map((e: { enterpriseId: string }) => e.enterpriseId),
      [ids.enterprise],
    );
    assert.deepEqual(
      orgs.items.map((o: { orgId: string; name: string }) => [o.orgId, o.name]),
      [[ids.org, 'Remote High']],
    );
    // Written on the server's database.
    const row = await server.ctx.db.db.selectFrom('users').select(['email', 'role']).where('org_id', '=', ids.org).executeTakeFirstOrThrow();
    assert.deepEqual(row, { email: 'rosa@example.test', role: 'responder' });
  });

  it("sets and clears an org's acknowledgement deadline, over the API and on the database alike", async () => {
    const set = await cli('admin', 'org', 'update', '--org', ids.org, '--ack-deadline', '30');
    assert.equal(set.ackDeadlineSeconds, 30);
    const read = await (await fetch(`${server.url}/api/admin/v1/orgs/${ids.org}`, { headers: { authorization: `Bearer ${adminKey.key}` } })).json();
    assert.equal(read.ackDeadlineSeconds, 30);
    const local = await runCli(['admin', 'org', 'update', '--org', ids.org, '--ack-deadline', 'off', '--json'], { DATABASE_URL: server.databaseUrl }, { cwd });
    assert.equal(local.code, 0, local.stderr);
    assert.equal(local.json.ackDeadlineSeconds, null);
    // Out of range: a usage error naming the field, in both modes, and nothing changes.
    const refused = await run(['admin', 'org', 'update', '--org', ids.org, '--ack-deadline', '3']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /ackDeadlineSeconds/);
    const row = await server.ctx.db.db.selectFrom('orgs').select('ack_deadline_seconds').where('id', '=', ids.org).executeTakeFirstOrThrow();
    assert.equal(row.ack_deadline_seconds, null);
  });

  it('mints an API key that works on the public API, lists, rotates and revokes it', async () => {
    const created = await cli('admin', 'key', 'create', '--name', 'remote ops', '--subject', `org:${ids.org}`, '--permissions', 'read,write');
    assert.deepEqual(Object.keys(created), ['id', 'key']);
    assert.match(created.key, /^enk_live_[0-9a-f]{72}$/);
    const api = client(server.base, created.key);
    const declared = await api.post(`/orgs/${ids.org}/emergencies`, { categoryName: 'lockdown' });
    assert.equal(declared.status, 201);
    assert.deepEqual(declared.body.declaredBy, { type: 'api_key', id: created.id, name: 'remote ops' });

    const listed = await cli('admin', 'key', 'list');
    const mine = listed.items.find((k: { id: string }) => k.id === created.id);
    assert.deepEqual(Object.keys(mine).sort(), [
      'activeUntilDate',
      'allowedOrgIds',
      'createdAt',
      'id',
      'lastUsedAt',
      'name',
      'permissions',
      'status',
      'subject',
    ]);
    assert.deepEqual(mine.subject, { type: 'org', id: ids.org });
    assert.ok(!JSON.stringify(listed).includes(created.key.slice(17)), 'no secret in the list');

    const rotated = await cli('admin', 'key', 'rotate', created.id, '--grace-hours', '1');
    assert.deepEqual(Object.keys(rotated), ['id', 'key', 'previousKeyExpiresAt']);
    assert.equal((await client(server.base, rotated.key).get(`/orgs/${ids.org}/emergencies`)).status, 200);
    const revoked = await cli('admin', 'key', 'revoke', rotated.id);
    assert.deepEqual(revoked, { id: rotated.id, status: 'inactive' });
  });

  it('creates a webhook, lists it, pings it and shows its deliveries; changes, disables and deletes it', async () => {
    const created = await cli('admin', 'webhook', 'create', '--subject', `org:${ids.org}`, '--url', receiverUrl, '--events', 'emergency.declared');
    assert.deepEqual(Object.keys(created), ['id', 'secret']);
    assert.match(created.secret, /^whsec_/);
    const listed = await cli('admin', 'webhook', 'list');
    const hook = listed.items.find((w: { id: string }) => w.id === created.id);
    assert.deepEqual(hook.eventTypes, ['emergency.declared']);
    assert.equal(hook.url, receiverUrl);
    assert.equal(hook.status, 'active');
    assert.ok(!JSON.stringify(listed).includes('whsec_'), 'no secret in the list');

    const ping = await cli('admin', 'webhook', 'test', created.id);
    assert.deepEqual(ping, { ...ping, id: created.id, outcome: 'succeeded', responseCode: 204, error: null });
    const deliveries = await cli('admin', 'webhook', 'deliveries', created.id, '--limit', '5');
    assert.equal(deliveries.subscriptionId, created.id);
    assert.equal(deliveries.items[0].eventType, 'webhook.ping');
    assert.equal(deliveries.items[0].attempts[0].responseStatus, 204);
    const table = await run(['admin', 'webhook', 'deliveries', created.id]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^EVENT TYPE +EVENT ID +STATUS +ATTEMPTS +LAST ATTEMPT AT +RESPONSE STATUS +LATENCY MS +ERROR\nwebhook\.ping /);

    const updated = await cli('admin', 'webhook', 'update', created.id, '--all-events');
    assert.equal(updated.eventTypes, null);
    assert.equal((await cli('admin', 'webhook', 'disable', created.id)).status, 'disabled');
    assert.equal((await cli('admin', 'webhook', 'enable', created.id)).status, 'active');
    const rotated = await cli('admin', 'webhook', 'rotate-secret', created.id);
    assert.notEqual(rotated.secret, created.secret);
    assert.deepEqual(await cli('admin', 'webhook', 'replay', created.id, '--since', '2020-01-01T00:00:00Z'), { id: created.id, replayed: 1 });
    assert.deepEqual(await cli('admin', 'webhook', 'delete', created.id), { id: created.id, deleted: true });
  });

  it('registers, lists, rotates and revokes a device', async () => {
    const created = await cli('admin', 'device', 'create', '--org', ids.org, '--name', 'Lobby station');
    assert.deepEqual(Object.keys(created), ['id', 'token']);
    assert.match(created.token, /^enk_dev_[0-9a-f]{72}$/);
    const [inOrg, everywhere] = await Promise.all([cli('admin', 'device', 'list', '--org', ids.org), cli('admin', 'device', 'list')]);
    assert.deepEqual(
      inOrg.items.map((d: { id: string; orgId: string; name: string; online: boolean }) => [d.id, d.orgId, d.name, d.online]),
      [[created.id, ids.org, 'Lobby station', false]],
    );
    // Without --org: org by org, every org the admin key reaches.
    assert.deepEqual(everywhere, inOrg);
    const rotated = await cli('admin', 'device', 'rotate-token', created.id);
    assert.equal(rotated.id, created.id);
    assert.notEqual(rotated.token, created.token);
    const revoked = await cli('admin', 'device', 'revoke', created.id);
    assert.deepEqual(Object.keys(revoked), ['id', 'status', 'revokedAt']);
    assert.equal(revoked.status, 'revoked');
  });

  it('mints, lists and revokes admin keys, and takes the server from --url and --admin-key-file', async () => {
    const created = await cli('admin', 'admin-key', 'create', '--name', 'district', '--subject', `enterprise:${ids.enterprise}`);
    assert.match(created.key, /^enk_adm_[0-9a-f]{72}$/);
    const listed = await cli('admin', 'admin-key', 'list');
    const mine = listed.items.find((k: { adminKeyId: string }) => k.adminKeyId === created.id);
    assert.deepEqual(mine.subject, { type: 'enterprise', id: ids.enterprise });
    assert.equal(mine.key, undefined);

    // The new key through the flags, after the command words and before them; the flags win over the environment.
    const misdirected = { DATABASE_URL: undefined, EMERGENCY_API_URL: `http://127.0.0.1:${await freePort()}`, EMERGENCY_API_ADMIN_KEY: adminKey.key };
    const keyFile = secretFile(`${created.key}\n`);
    const [flagsAfter, flagsBefore, legacy] = await Promise.all([
      run(['admin', 'org', 'list', '--enterprise', ids.enterprise, '--url', server.url, '--admin-key-file', keyFile, '--json'], misdirected),
      run(['--url', server.url, '--admin-key-file', keyFile, 'admin', 'partner', 'list', '--json'], { DATABASE_URL: undefined }),
      run(['--url', server.url, '--admin-key', created.key, 'admin', 'partner', 'list', '--json'], { DATABASE_URL: undefined }),
    ]);
    assert.equal(flagsAfter.stderr, '');
    // The key on the command line (visible in ps) still works for old scripts, with a warning that never repeats it.
    assert.equal(legacy.code, 0, legacy.stderr);
    assert.match(JSON.parse(legacy.stderr).note, /^warning: --admin-key puts the admin key on the command line.*--admin-key-file PATH/);
    assert.ok(!legacy.stderr.includes(created.key.slice(8)));
    assert.equal(flagsAfter.code, 0, flagsAfter.stderr);
    assert.deepEqual(
      flagsAfter.json.items.map((o: { orgId: string }) => o.orgId),
      [ids.org],
    );
    assert.equal(flagsBefore.code, 0, flagsBefore.stderr);
    // An enterprise's admin key sees no partner.
    assert.deepEqual(flagsBefore.json.items, []);

    const revoked = await cli('admin', 'admin-key', 'revoke', created.id);
    assert.deepEqual(revoked, { id: created.id, status: 'inactive' });
  });

  it('shows an API error as "<status> <code>: <message>", the refused fields of a 422, and exits 1', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    const [human, json, invalid] = await Promise.all([
      run(['admin', 'org', 'create', '--enterprise', missing, '--name', 'Nowhere']),
      run(['admin', 'key', 'revoke', missing, '--json']),
      run(['admin', 'key', 'create', '--name', 'n'.repeat(200), '--subject', `org:${ids.org}`, '--permissions', 'read']),
    ]);
    assert.equal(human.code, 1);
    assert.equal(human.stdout, '');
    assert.equal(human.stderr, `error: 404 not_found: No enterprise ${missing}.\n`);
    assert.equal(json.code, 1);
    assert.deepEqual(JSON.parse(json.stderr), { error: `404 not_found: No API key ${missing}.`, status: 404, code: 'not_found' });
    assert.equal(invalid.code, 1);
    assert.match(invalid.stderr, /^error: 422 validation_error: the request was refused\n {2}body\.name: .+\n$/);
  });

  it('refuses http:// to another machine unless --insecure is given', async () => {
    // 0.0.0.0 is not a loopback address, yet a connection to it reaches this machine: the test server.
    const elsewhere = server.url.replace('127.0.0.1', '0.0.0.0');
    const env = { ...remoteEnv(), EMERGENCY_API_URL: elsewhere };
    const [refused, viaFlag, insecure, tls, loopbackNames] = await Promise.all([
      run(['admin', 'partner', 'list'], env),
      run(['--url', 'http://203.0.113.7:8080', 'admin', 'partner', 'list'], { ...remoteEnv(), EMERGENCY_API_URL: undefined }),
      run(['--insecure', 'admin', 'partner', 'list', '--json'], env),
      run(['admin', 'partner', 'list'], { ...remoteEnv(), EMERGENCY_API_URL: `https://127.0.0.1:${await freePort()}` }),
      run(['admin', 'partner', 'list', '--json'], { ...remoteEnv(), EMERGENCY_API_URL: server.url.replace('127.0.0.1', 'localhost') }),
    ]);
    assert.equal(refused.code, 78);
    assert.match(
      refused.stderr,
      /^error: EMERGENCY_API_URL is http:\/\/ to 0\.0\.0\.0, another machine: the admin key would cross the network unencrypted\. .*--insecure/,
    );
    assert.equal(viaFlag.code, 78);
    assert.match(viaFlag.stderr, /^error: --url is http:\/\/ to 203\.0\.113\.7, another machine/);
    assert.equal(insecure.code, 0, insecure.stderr);
    assert.ok(Array.isArray(insecure.json.items));
    assert.match(JSON.parse(insecure.stderr).note, /^warning: --insecure: the admin key goes to http:\/\/0\.0\.0\.0:\d+ over plain HTTP/);
    // https:// is never refused (here nothing listens: unreachable, not refused), and loopback names are this machine.
    assert.equal(tls.code, 69, tls.stderr);
    assert.equal(loopbackNames.code, 0, loopbackNames.stderr);
  });

  it('takes the admin key from EMERGENCY_API_ADMIN_KEY_FILE, and names an unreadable file without showing any key', async () => {
    const keyFile = secretFile(`  ${adminKey.key}\n\n`);
    const base = { DATABASE_URL: undefined, EMERGENCY_API_URL: server.url };
    const [fromFile, both, missing, empty, notAdmin] = await Promise.all([
      run(['admin', 'partner', 'list', '--json'], { ...base, EMERGENCY_API_ADMIN_KEY_FILE: keyFile }),
      run(['admin', 'partner', 'list'], { ...base, EMERGENCY_API_ADMIN_KEY_FILE: keyFile, EMERGENCY_API_ADMIN_KEY: adminKey.key }),
      run(['admin', 'partner', 'list'], { ...base, EMERGENCY_API_ADMIN_KEY_FILE: join(keyDir, 'absent') }),
      run(['admin', 'partner', 'list', '--admin-key-file', secretFile('\n')], base),
      run(['admin', 'partner', 'list'], { ...base, EMERGENCY_API_ADMIN_KEY_FILE: secretFile(`enk_live_${'ab'.repeat(36)}`) }),
    ]);
    assert.equal(fromFile.code, 0, fromFile.stderr);
    assert.equal(fromFile.stderr, '');
    assert.ok(fromFile.json.items.some((p: { partnerId: string }) => p.partnerId === ids.partner));
    assert.equal(both.code, 78);
    assert.match(both.stderr, /EMERGENCY_API_ADMIN_KEY and EMERGENCY_API_ADMIN_KEY_FILE are both set/);
    assert.equal(missing.code, 78);
    assert.match(missing.stderr, /^error: EMERGENCY_API_ADMIN_KEY_FILE names .*absent, which cannot be read \(no such file\)/);
    assert.equal(empty.code, 78);
    assert.match(empty.stderr, /^error: --admin-key-file names .*, which is empty/);
    assert.equal(notAdmin.code, 78);
    assert.match(notAdmin.stderr, /EMERGENCY_API_ADMIN_KEY_FILE must be an admin key \(enk_adm_\.\.\.\), not an API key/);
    for (const res of [fromFile, both, missing, empty, notAdmin])
      assert.ok(!res.stderr.includes(adminKey.key.slice(8)) && !res.stderr.includes('ab'.repeat(36)));
  });

  it('never echoes a key given in the wrong place: as --url, as a command word, or inside a URL', async () => {
    const secret = adminKey.key.slice(8);
    const closed = `http://127.0.0.1:${await freePort()}`;
    const results = await Promise.all([
      run(['admin', 'partner', 'list', '--url', adminKey.key], { DATABASE_URL: undefined, EMERGENCY_API_ADMIN_KEY: adminKey.key }),
      run(['--url', adminKey.key, 'admin', 'partner', 'list', '--json'], { DATABASE_URL: undefined, EMERGENCY_API_ADMIN_KEY: adminKey.key }),
      run(['admin', 'partner', 'list'], { ...remoteEnv(), EMERGENCY_API_URL: adminKey.key }),
      run(['admin', adminKey.key], remoteEnv()),
      run(['admin', 'partner', 'list', adminKey.key, '--json'], remoteEnv()),
      run(['admin', 'partner', 'list', '--url', `${closed}/${adminKey.key}`], remoteEnv()),
      run(['admin', 'partner', 'list', '--url', 'not a url'], { DATABASE_URL: undefined, EMERGENCY_API_ADMIN_KEY: `enk_adm_${'c'.repeat(72)}` }),
    ]);
    const [asUrl, asUrlJson, asUrlEnv, asCommand, asPositional, inUrl, badUrl] = results;
    assert.equal(asUrl.code, 78);
    assert.match(asUrl.stderr, /^error: --url holds a key, not a URL \(not shown\): give the server's base URL there/);
    assert.equal(asUrlJson.code, 78);
    assert.match(JSON.parse(asUrlJson.stderr).error, /^--url holds a key, not a URL/);
    assert.match(asUrlEnv.stderr, /^error: EMERGENCY_API_URL holds a key, not a URL/);
    assert.equal(asCommand.code, 2);
    assert.match(asCommand.stderr, /unknown command "admin enk_adm_\.\.\."/);
    assert.equal(asPositional.code, 2);
    assert.equal(inUrl.code, 78);
    assert.match(inUrl.stderr, /^error: --url holds a key, not a URL/);
    assert.equal(badUrl.code, 78);
    for (const res of results) {
      assert.ok(!res.stderr.includes(secret) && !res.stdout.includes(secret), res.stderr);
      assert.ok(!res.stderr.includes('c'.repeat(72)));
    }
  });

  it('names the server setting when the server cannot be reached or the key is refused', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const [unreachable, viaFlag, refused] = await Promise.all([
      run(['admin', 'partner', 'list'], { DATABASE_URL: undefined, EMERGENCY_API_URL: closed, EMERGENCY_API_ADMIN_KEY: adminKey.key }),
      run(['admin', 'partner', 'list', '--url', closed, '--admin-key-file', secretFile(adminKey.key)], { DATABASE_URL: undefined }),
      run(['admin', 'partner', 'list'], { ...remoteEnv(), EMERGENCY_API_ADMIN_KEY: `enk_adm_${'0'.repeat(72)}` }),
    ]);
    assert.equal(unreachable.code, 69);
    assert.match(
      unreachable.stderr,
      new RegExp(`^error: cannot reach the admin API at ${closed}/api/admin/v1 \\(EMERGENCY_API_URL\\): connection refused\\.\\n`),
    );
    assert.match(unreachable.stderr, /unset EMERGENCY_API_URL and EMERGENCY_API_ADMIN_KEY to work on the database/);
    assert.equal(viaFlag.code, 69);
    assert.match(viaFlag.stderr, /\(--url\): connection refused/);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^error: 401 unauthenticated: .*check EMERGENCY_API_ADMIN_KEY/);
  });

  it('refuses a database-only command while EMERGENCY_API_URL names a server and DATABASE_URL is unset', async () => {
    const [migrate, demo] = await Promise.all([run(['migrate']), run(['admin', 'demo', '--json'])]);
    assert.equal(migrate.code, 2);
    assert.match(
      migrate.stderr,
      /^error: "migrate" works on a database, never over the admin API, and EMERGENCY_API_URL names a server while DATABASE_URL is unset/,
    );
    assert.equal(demo.code, 2);
    assert.match(JSON.parse(demo.stderr).error, /DATABASE_URL is unset/);
  });

  it('sends one Idempotency-Key per command run with each write', async () => {
    const keys = await server.ctx.db.db.selectFrom('idempotency_keys').select('idem_key').where('api_key_id', '=', adminKey.adminKeyId).execute();
    // Every write of the tests above, each under a UUID of its own.
    assert.ok(keys.length >= 10, `${keys.length} stored answers`);
    for (const { idem_key } of keys) assert.match(idem_key, UUID);
    assert.equal(new Set(keys.map((k) => k.idem_key)).size, keys.length);
  });

  it('prints the same output as on the database', async () => {
    await cli('admin', 'webhook', 'create', '--subject', `partner:${ids.partner}`, '--url', receiverUrl);
    // The same commands on the server's database (DATABASE_URL, no server named): the same output, text and JSON.
    const databaseEnv = { DATABASE_URL: server.databaseUrl };
    for (const args of [
      ['admin', 'key', 'list'],
      ['admin', 'webhook', 'list'],
      ['admin', 'device', 'list', '--org', ids.org],
      ['admin', 'partner', 'list'],
      ['admin', 'org', 'list', '--enterprise', ids.enterprise],
    ]) {
      for (const mode of [[], ['--json']]) {
        const [remote, local] = await Promise.all([run([...args, ...mode]), runCli([...args, ...mode], databaseEnv, { cwd })]);
        assert.equal(remote.code, 0, remote.stderr);
        assert.equal(local.code, 0, local.stderr);
        assert.equal(remote.stdout, local.stdout, `${args.join(' ')} ${mode.join(' ')}`);
      }
    }
  });

  it('created nothing in the directory it ran in', () => {
    assert.deepEqual(readdirSync(cwd), []);
  });
});

describe('admin CLI on the database (no EMERGENCY_API_URL)', () => {
  const cwd = emptyDir();
  after(() => rmSync(cwd, { recursive: true, force: true }));
  const noDatabase = { DATABASE_URL: undefined };

  it('refuses a missing SQLite file with exit code 66, naming DATABASE_URL and the server settings, and creates nothing', async () => {
    const [human, json] = await Promise.all([
      runCli(['admin', 'partner', 'create', '--name', 'Lost'], noDatabase, { cwd }),
      runCli(['admin', 'key', 'list', '--json'], noDatabase, { cwd }),
    ]);
    assert.equal(human.code, 66);
    assert.equal(human.stdout, '');
    assert.match(
      human.stderr,
      /^error: no database at sqlite:\.\/data\/emergency\.db \(DATABASE_URL unset: the default\), and "admin partner create" does not create one\.\n/,
    );
    assert.match(human.stderr, /Set DATABASE_URL to the server's database, or set EMERGENCY_API_URL and EMERGENCY_API_ADMIN_KEY/);
    assert.equal(json.code, 66);
    assert.equal(JSON.parse(json.stderr).database, 'sqlite:./data/emergency.db');
    assert.deepEqual(readdirSync(cwd), []);
  });

  it('migrate creates the default database and names it; other commands then use it', async () => {
    const migrate = await runCli(['migrate'], noDatabase, { cwd });
    assert.equal(migrate.code, 0, migrate.stderr);
    assert.equal(migrate.stderr, 'using database sqlite:./data/emergency.db (DATABASE_URL unset: the default)\n');
    assert.deepEqual(
      readdirSync(join(cwd, 'data')).filter((f) => f.endsWith('.db')),
      ['emergency.db'],
    );
    const partner = await runCli(['admin', 'partner', 'create', '--name', 'Found', '--json'], noDatabase, { cwd });
    assert.equal(partner.code, 0, partner.stderr);
    assert.match(partner.json.id, UUID);
    assert.deepEqual(JSON.parse(partner.stderr), {
      note: 'using database sqlite:./data/emergency.db (DATABASE_URL unset: the default)',
      database: 'sqlite:./data/emergency.db',
    });
  });

  it('admin admin-key create bootstraps a new installation: it creates the database', async () => {
    const fresh = emptyDir();
    try {
      const created = await runCli(['admin', 'admin-key', 'create', '--name', 'root', '--subject', 'instance', '--json'], noDatabase, { cwd: fresh });
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.json.key, /^enk_adm_/);
      assert.ok(readdirSync(join(fresh, 'data')).includes('emergency.db'));
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });
});

describe('the admin key is never shown on a command line', () => {
  it('no page of the README or docs/ teaches --admin-key KEY, which every user of the machine sees in ps', () => {
    const root = join(import.meta.dirname, '..', '..');
    const pages = [
      'README.md',
      'CONTRIBUTING.md',
      ...readdirSync(join(root, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    const offences = pages.flatMap((page) =>
      readFileSync(join(root, page), 'utf8')
        .split('\n')
        .map((line, i) => ({ line, at: `${page}:${i + 1}` }))
        .filter(({ line }) => /--admin-key(?![-\w])/.test(line))
        .map(({ at }) => at),
    );
    assert.deepEqual(offences, []);
  });
});
