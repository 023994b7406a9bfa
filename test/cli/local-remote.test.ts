import { type Receiver, startReceiver } from '../delivery/helpers.js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AdminComponents } from '../../clients/typescript/src/index.js';
import type { DeviceAnswer } from '../../src/cli/admin-devices.js';
import type { ApiKeyRecord } from '../../src/cli/admin-keys.js';
import type { WebhookRecord } from '../../src/cli/admin-webhooks.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { type CliResult, runCli } from '../helpers/cli.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

type ApiRecord<Name extends keyof AdminComponents['schemas']> = AdminComponents['schemas'][Name];
type Reads<Cli, Api extends Cli> = [Cli, Api];
/**
 * Type-checks only while each record the admin API answers, as its generated client declares it, reads as the record
 * the CLI's presenters take (the CLI names the records it renames from the service's; the others are the service's own).
 */
export type CliReadsAdminRecords = [
  Reads<WebhookRecord, ApiRecord<'Webhook'>>,
  Reads<ApiKeyRecord, ApiRecord<'ApiKey'>>,
  Reads<DeviceAnswer, ApiRecord<'Device'>>,
];

type Side = 'database' | 'admin API';

/** An answer with what differs by nature between two runs masked: ids, secrets, times and latencies. */
function masked(answer: unknown): unknown {
  return JSON.parse(
    JSON.stringify(answer)
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>')
      .replace(/"(enk_[a-z]+_|whsec_)[^"]+"/g, '"$1<secret>"')
      .replace(/"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"/g, '"<time>"')
      .replace(/"latencyMs":[\d.]+/g, '"latencyMs":0'),
  );
}

/**
 * Each admin command runs on the database (DATABASE_URL) or on a server (EMERGENCY_API_URL): both must print the
 * same records. Both sides here work on one database, the server's, so a read prints the very same text and JSON.
 */
describe('admin commands print the same on the database and over the admin API', () => {
  let server: TestServer;
  let receiver: Receiver;
  let receiverUrl: string;
  let env: Record<Side, Record<string, string | undefined>>;

  before(async () => {
    server = await startTestServer();
    const adminKey = await createAdminKey(server.ctx, operatorCaller(), { name: 'both sides', subject: { type: 'instance' } });
    env = {
      database: { DATABASE_URL: server.databaseUrl, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
      'admin API': { DATABASE_URL: undefined, EMERGENCY_API_URL: server.url, EMERGENCY_API_ADMIN_KEY: adminKey.key },
    };
    receiver = await startReceiver();
    receiverUrl = `${receiver.url}/hook`;
  });
  after(async () => {
    await receiver.close();
    await server.close();
  });

  const run = (side: Side, args: string[]): Promise<CliResult> => runCli(args, env[side]);
  const json = async (side: Side, ...args: string[]) => {
    const res = await run(side, [...args, '--json']);
    assert.equal(res.code, 0, `${side}: ${args.join(' ')}: ${res.stderr}`);
    return res.json;
  };

  /** The same writes on each side, each on objects of its own; every answer by command. */
  async function writes(side: Side): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    const cli = async (...args: string[]) => {
      const answer = await json(side, ...args);
      out[args.slice(0, 3).join(' ')] = answer;
      return answer;
    };
    const partner = (await cli('admin', 'partner', 'create', '--name', 'Twin Partner')).id;
    const enterprise = (await cli('admin', 'enterprise', 'create', '--partner', partner, '--name', 'Twin Schools')).id;
    const org = (await cli('admin', 'org', 'create', '--enterprise', enterprise, '--name', 'Twin High')).id;
    await cli('admin', 'org', 'update', '--org', org, '--ack-deadline', '30');
    await cli('admin', 'quota', 'set', '--org', org, '--devices', '4');
    await cli('admin', 'cap-mapping', 'set', '--org', org, '--event', 'SEVERE STORM', '--category', 'Uncategorized');
    const key = (await cli('admin', 'key', 'create', '--name', 'twin', '--subject', `org:${org}`, '--permissions', 'read')).id;
    const successor = (await cli('admin', 'key', 'rotate', key, '--grace-hours', '1')).id;
    await cli('admin', 'key', 'revoke', successor);
    const adminKey = (await cli('admin', 'admin-key', 'create', '--name', 'twin', '--subject', `enterprise:${enterprise}`)).id;
    await cli('admin', 'admin-key', 'revoke', adminKey);
    const device = (await cli('admin', 'device', 'create', '--org', org, '--name', 'Twin station')).id;
    await cli('admin', 'device', 'rotate-token', device);
    await cli('admin', 'device', 'revoke', device);
    const webhook = (await cli('admin', 'webhook', 'create', '--subject', `org:${org}`, '--url', receiverUrl)).id;
    await cli('admin', 'webhook', 'update', webhook, '--events', 'emergency.declared');
    // The reason names who disabled it (an operator on the database, an admin key over the API): it differs by nature.
    const disabled = await cli('admin', 'webhook', 'disable', webhook);
    assert.equal(disabled.status, 'disabled');
    disabled.disabledReason = '<who>';
    await cli('admin', 'webhook', 'enable', webhook);
    await cli('admin', 'webhook', 'rotate-secret', webhook);
    await cli('admin', 'webhook', 'test', webhook);
    await cli('admin', 'webhook', 'replay', webhook, '--since', '2020-01-01T00:00:00Z');
    await cli('admin', 'webhook', 'delete', webhook);
    return out;
  }

  it('prints the same answer to each write (ids, secrets and times aside)', async () => {
    const [onDatabase, overApi] = await Promise.all([writes('database'), writes('admin API')]);
    assert.deepEqual(Object.keys(overApi), Object.keys(onDatabase));
    for (const command of Object.keys(onDatabase)) {
      assert.ok(Object.keys(onDatabase[command] as object).length > 0, command);
      assert.deepEqual(masked(overApi[command]), masked(onDatabase[command]), command);
    }
  });

  it('prints the very same text and JSON for each read of one database', async () => {
    // A tenant of its own, with a device, a CAP mapping, an API key and a pinged webhook to list.
    const cli = (...args: string[]) => json('admin API', ...args);
    const partner = (await cli('admin', 'partner', 'create', '--name', 'Read Partner')).id;
    const enterprise = (await cli('admin', 'enterprise', 'create', '--partner', partner, '--name', 'Read Schools')).id;
    const org = (await cli('admin', 'org', 'create', '--enterprise', enterprise, '--name', 'Read High')).id;
    await cli('admin', 'device', 'create', '--org', org, '--name', 'Read station');
    await cli('admin', 'cap-mapping', 'set', '--org', org, '--event', 'FLOOD', '--category', 'Uncategorized');
    await cli('admin', 'key', 'create', '--name', 'reader', '--subject', `org:${org}`, '--permissions', 'read', '--allowed-orgs', org);
    const webhook = (await cli('admin', 'webhook', 'create', '--subject', `partner:${partner}`, '--url', receiverUrl)).id;
    await cli('admin', 'webhook', 'test', webhook);

    const reads = [
      ['admin', 'partner', 'list'],
      ['admin', 'enterprise', 'list', '--partner', partner],
      ['admin', 'org', 'list', '--enterprise', enterprise],
      ['admin', 'quota', 'show', '--partner', partner],
      ['admin', 'cap-mapping', 'list', '--org', org],
      ['admin', 'key', 'list'],
      ['admin', 'device', 'list', '--org', org],
      ['admin', 'device', 'list'],
      ['admin', 'webhook', 'list'],
      ['admin', 'webhook', 'deliveries', webhook],
    ];
    for (const args of reads) {
      const [dbJson, apiJson, dbText, apiText] = await Promise.all([
        run('database', [...args, '--json']),
        run('admin API', [...args, '--json']),
        run('database', args),
        run('admin API', args),
      ]);
      for (const res of [dbJson, apiJson, dbText, apiText]) assert.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}`);
      assert.ok(Object.keys(dbJson.json).length > 0, args.join(' '));
      assert.deepEqual(apiJson.json, dbJson.json, args.join(' '));
      assert.equal(apiJson.stdout, dbJson.stdout, args.join(' '));
      assert.equal(apiText.stdout, dbText.stdout, args.join(' '));
    }
  });
});
