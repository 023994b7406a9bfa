import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { freshDatabaseUrl } from '../helpers/db.js';

const PACKAGE = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** The command words listed under "Commands:" in a help text. */
function listedCommands(help: string): string[] {
  const section = help.split('\nCommands:\n')[1]!.split('\n\n')[0]!;
  return section.split('\n').map((line) => line.trim().split(/\s{3,}/)[0]!);
}

describe('CLI help and version', () => {
  const database = freshDatabaseUrl();
  const env = { DATABASE_URL: database.url };
  after(() => database.drop());

  it('prints the help of the program, of each group and of each command on stdout, exit 0', async () => {
    const [root, rootHelpWord, admin, webhook, webhookHelpWord, key, device] = await Promise.all([
      runCli(['--help'], env),
      runCli(['help'], env),
      runCli(['admin', '--help'], env),
      runCli(['admin', 'webhook', '--help'], env),
      runCli(['help', 'admin', 'webhook'], env),
      runCli(['admin', 'key', '-h'], env),
      runCli(['admin', 'device', '--help', '--json'], env),
    ]);
    for (const res of [root, rootHelpWord, admin, webhook, webhookHelpWord, key, device]) {
      assert.equal(res.code, 0, res.stderr);
      assert.equal(res.stderr, '');
      assert.match(res.stdout, /^Usage: emergency-api /);
    }
    assert.equal(rootHelpWord.stdout, root.stdout);
    assert.ok(listedCommands(root.stdout).includes('serve'));
    assert.ok(listedCommands(root.stdout).includes('admin webhook test'));
    assert.match(root.stdout, /--version/);

    assert.match(admin.stdout, /^Usage: emergency-api admin <command> \[options\]/);
    assert.ok(listedCommands(admin.stdout).includes('partner create'));
    assert.ok(listedCommands(admin.stdout).includes('webhook create'));
    assert.ok(!listedCommands(admin.stdout).includes('serve'));

    assert.match(webhook.stdout, /^Usage: emergency-api admin webhook <command> \[options\]/);
    assert.deepEqual(listedCommands(webhook.stdout), [
      'create',
      'list',
      'update',
      'disable',
      'enable',
      'rotate-secret',
      'delete',
      'deliveries',
      'replay',
      'test',
    ]);
    // Each command with its one-line description.
    assert.match(webhook.stdout, /\n {2}test +send a signed webhook\.ping now/);
    assert.equal(webhookHelpWord.stdout, webhook.stdout);

    assert.deepEqual(listedCommands(key.stdout).sort(), ['create', 'list', 'revoke', 'rotate']);
    assert.deepEqual(listedCommands(device.stdout).sort(), ['create', 'list', 'revoke', 'rotate-token']);
  });

  it("prints a command's usage, arguments and options", async () => {
    const [create, test, serve, late] = await Promise.all([
      runCli(['admin', 'webhook', 'create', '--help'], env),
      runCli(['admin', 'webhook', 'test', '--help'], env),
      runCli(['serve', '--help'], env),
      // --help anywhere after the command's words, even after other arguments.
      runCli(['admin', 'key', 'revoke', '00000000-0000-4000-8000-000000000000', '--help'], env),
    ]);
    for (const res of [create, test, serve, late]) {
      assert.equal(res.code, 0, res.stderr);
      assert.equal(res.stderr, '');
    }
    assert.match(
      create.stdout,
      /^Usage: emergency-api admin webhook create --subject SUBJECT --url URL \[--allowed-orgs ID,ID\] \[--events TYPES\] \[--json\]\n/,
    );
    assert.match(create.stdout, /\nRequired options:\n {2}--subject SUBJECT +org:ID, enterprise:ID or partner:ID/);
    assert.match(create.stdout, /\n {2}--url URL +.*WEBHOOK_ALLOW_PRIVATE_TARGETS/);
    assert.match(create.stdout, /\n {2}--events TYPES +only these event types/);
    assert.match(create.stdout, /\n {2}--json +/);
    assert.match(test.stdout, /^Usage: emergency-api admin webhook test ID \[--json\]\n/);
    assert.match(test.stdout, /\nArguments:\n {2}ID +the subscription id\n/);
    assert.match(serve.stdout, /^Usage: emergency-api serve \[--role ROLE\] \[--processes N\] \[--sandbox\] \[--demo\]\n/);
    assert.match(serve.stdout, /\n {2}--role ROLE +what this process runs: all, api, gateway, worker/);
    assert.match(serve.stdout, /\n {2}--processes N +run N processes of the role sharing PORT, under a supervisor .*PROCESSES/);
    assert.doesNotMatch(serve.stdout, /--json/);
    assert.match(late.stdout, /^Usage: emergency-api admin key revoke ID/);
  });

  it('answers an unknown command with the nearest group help on stderr, exit 2', async () => {
    const [unknownTop, unknownAdmin, typo, unknownInGroup, bareGroup, nothing, asJson] = await Promise.all([
      runCli(['frobnicate'], env),
      runCli(['admin', 'frobnicate'], env),
      runCli(['admin', 'webhok', 'list'], env),
      runCli(['admin', 'webhook', 'frobnicate', '--help'], env),
      runCli(['admin', 'webhook'], env),
      runCli([], env),
      runCli(['admin', 'frobnicate', '--json'], env),
    ]);
    for (const res of [unknownTop, unknownAdmin, typo, unknownInGroup, bareGroup, nothing, asJson]) {
      assert.equal(res.code, 2, res.stderr);
      assert.equal(res.stdout, '');
    }
    assert.match(unknownTop.stderr, /^error: unknown command "frobnicate"\n\nUsage: emergency-api <command> \[options\]/);
    assert.match(unknownAdmin.stderr, /^error: unknown command "admin frobnicate"\n\nUsage: emergency-api admin <command> \[options\]/);
    assert.match(typo.stderr, /did you mean "admin webhook"\?/);
    assert.match(unknownInGroup.stderr, /^error: unknown command "admin webhook frobnicate"\n\nUsage: emergency-api admin webhook <command>/);
    assert.match(bareGroup.stderr, /^error: "admin webhook" needs a command\n\nUsage: emergency-api admin webhook <command>/);
    assert.match(nothing.stderr, /^Usage: emergency-api <command> \[options\]/);
    // --json: the error is one JSON object on stderr.
    assert.match(JSON.parse(asJson.stderr).error, /^unknown command "admin frobnicate"\n\nUsage: emergency-api admin <command>/);
  });

  it('describes where admin commands run: the server variables and flags, and the database-only commands', async () => {
    const [root, admin, keyCreate, webhookCreate, migrate] = await Promise.all([
      runCli(['--help'], env),
      runCli(['admin', '--help'], env),
      runCli(['admin', 'key', 'create', '--help'], env),
      runCli(['admin', 'webhook', 'create', '--help'], env),
      runCli(['migrate', '--help'], env),
    ]);
    for (const help of [root.stdout, admin.stdout]) {
      assert.match(help, /\n {2}--url URL +admin commands: run over the admin API of this server.*EMERGENCY_API_URL/);
      assert.match(help, /\n {2}--admin-key-file PATH +.*EMERGENCY_API_ADMIN_KEY/);
      assert.match(help, /\n {2}--insecure +.*http:\/\/ to another machine/);
      // The key itself is never taught on the command line, where ps shows it.
      assert.doesNotMatch(help, /--admin-key KEY/);
      assert.match(help, /\nWhere admin commands run:\n/);
      assert.match(help, /\n {2}Database only: migrate, admin demo /);
      assert.match(help, /exit 66 when it is missing/);
    }
    assert.match(keyCreate.stdout, /\n {2}--url URL +run over the admin API of this server \(default EMERGENCY_API_URL\)\n/);
    assert.match(keyCreate.stdout, /\n {2}--admin-key-file PATH +a file holding an admin key of that server \(default EMERGENCY_API_ADMIN_KEY\)\n/);
    assert.doesNotMatch(keyCreate.stdout, /--admin-key KEY/);
    // Its own --url is the receiver's: the server's goes before the command words.
    assert.doesNotMatch(webhookCreate.stdout, /--url URL +run over/);
    assert.match(webhookCreate.stdout, /"emergency-api --url URL --admin-key-file PATH admin webhook create \.\.\."/);
    assert.match(migrate.stdout, /\nWorks on the database of DATABASE_URL only/);
    assert.doesNotMatch(migrate.stdout, /--admin-key/);
  });

  it('prints the package version with --version and -v', async () => {
    const [long, short, json] = await Promise.all([runCli(['--version'], env), runCli(['-v'], env), runCli(['--version', '--json'], env)]);
    assert.equal(long.code, 0, long.stderr);
    assert.equal(long.stdout, `emergency-api ${PACKAGE.version}\n`);
    assert.equal(short.code, 0, short.stderr);
    assert.equal(short.stdout, long.stdout);
    assert.deepEqual(json.json, { version: PACKAGE.version });
  });

  it('names the command and its usage when the arguments are wrong', async () => {
    const res = await runCli(['admin', 'webhook', 'test'], env);
    assert.equal(res.code, 2);
    assert.match(
      res.stderr,
      /^error: expected ID\nusage: emergency-api admin webhook test ID \[--json\]\nrun "emergency-api admin webhook test --help" for its options\n$/,
    );
  });
});
