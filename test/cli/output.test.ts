import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { formatRecord, formatResult, formatTable } from '../../src/cli/output.js';
import { runCli } from '../helpers/cli.js';
import { freshDatabaseUrl } from '../helpers/db.js';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** The cells of a table printed by the CLI: its columns start where the header's words do. */
function parseTable(text: string): Record<string, string>[] {
  const [head, ...rows] = text.trimEnd().split('\n');
  const starts = [...head!.matchAll(/(?:^|(?<= {2}))\S/g)].map((m) => m.index!);
  const names = starts.map((start, i) => head!.slice(start, starts[i + 1]).trim());
  return rows.map((row) => Object.fromEntries(names.map((name, i) => [name, row.slice(starts[i], starts[i + 1]).trim()])));
}

describe('CLI human-readable output', () => {
  const database = freshDatabaseUrl();
  const env = { DATABASE_URL: database.url };
  const human = async (...args: string[]) => {
    const res = await runCli(args, env);
    assert.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}`);
    return res.stdout;
  };
  const json = async (...args: string[]) => {
    const res = await runCli([...args, '--json'], env);
    assert.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}`);
    return res.json;
  };
  let org: string;
  let enterprise: string;

  before(async () => {
    assert.equal((await runCli(['migrate', '--json'], env)).code, 0);
    const partner = await json('admin', 'partner', 'create', '--name', 'Output Partner');
    enterprise = (await json('admin', 'enterprise', 'create', '--partner', partner.id, '--name', 'Output Enterprise')).id;
    org = (await json('admin', 'org', 'create', '--enterprise', enterprise, '--name', 'Output Org')).id;
  });
  after(() => database.drop());

  it('prints a created record as key: value lines, a one-time secret with "(shown once)"', async () => {
    assert.match(await human('admin', 'partner', 'create', '--name', 'Another'), new RegExp(`^id: ${UUID}\n$`));
    const key = await human('admin', 'key', 'create', '--name', 'ops', '--subject', `org:${org}`, '--permissions', 'read,write');
    assert.match(key, new RegExp(`^id: ${UUID}\nkey: enk_live_[0-9a-f]{72} {3}\\(shown once\\)\n$`));
    const admin = await human('admin', 'admin-key', 'create', '--name', 'root', '--subject', 'instance');
    assert.match(admin, /\nkey: enk_adm_[0-9a-f]{72} {3}\(shown once\)\n$/);
    const device = await human('admin', 'device', 'create', '--org', org, '--name', 'Lobby station');
    assert.match(device, /\ntoken: enk_dev_[0-9a-f]{72} {3}\(shown once\)\n$/);
    const rotated = await human('admin', 'key', 'rotate', key.match(new RegExp(UUID))![0]!, '--grace-hours', '1');
    assert.match(rotated, /^id: \S+\nkey: enk_live_\S+ {3}\(shown once\)\npreviousKeyExpiresAt: \d{4}-/);
    assert.doesNotMatch(key + admin + device + rotated, /[{}"]/, 'no JSON');
  });

  it('prints lists as tables with aligned columns, never with secrets', async () => {
    const created = await json(
      'admin',
      'key',
      'create',
      '--name',
      'narrow key',
      '--subject',
      `enterprise:${enterprise}`,
      '--permissions',
      'read',
      '--allowed-orgs',
      org,
    );
    const text = await human('admin', 'key', 'list');
    assert.match(text, /^ID +NAME +SUBJECT +PERMISSIONS +ALLOWED ORG IDS +ACTIVE UNTIL DATE +STATUS +LAST USED AT\n/);
    const rows = parseTable(text);
    const narrow = rows.find((row) => row.ID === created.id)!;
    assert.deepEqual(narrow, {
      ID: created.id,
      NAME: 'narrow key',
      SUBJECT: `enterprise:${enterprise}`,
      PERMISSIONS: 'read',
      'ALLOWED ORG IDS': org,
      'ACTIVE UNTIL DATE': 'never',
      STATUS: 'active',
      'LAST USED AT': '-',
    });
    assert.ok(!text.includes(created.key.slice(17)), 'no secret');
    assert.ok(rows.some((row) => row.PERMISSIONS === 'read,write' && row['ALLOWED ORG IDS'] === 'all'));

    const devices = parseTable(await human('admin', 'device', 'list', '--org', org));
    assert.deepEqual(
      devices.map((d) => [d.NAME, d.STATUS, d.ONLINE, d['ACKED OFFSET']]),
      [['Lobby station', 'active', 'no', '0']],
    );
    const adminKeys = parseTable(await human('admin', 'admin-key', 'list'));
    assert.ok(adminKeys.some((k) => k.NAME === 'root' && k.SUBJECT === 'instance' && k.STATUS === 'active'));

    // An empty list says so.
    assert.equal(await human('admin', 'webhook', 'list'), '(none)\n');
  });

  it('prints the demo as key: value lines, both keys shown once', async () => {
    const text = await human('admin', 'demo');
    for (const field of ['partnerId', 'enterpriseId', 'orgId', 'keyId', 'adminKeyId']) assert.match(text, new RegExp(`^${field}: ${UUID}$`, 'm'));
    assert.match(text, /^key: enk_live_\S+ {3}\(shown once\)$/m);
    assert.match(text, /^adminKey: enk_adm_\S+ {3}\(shown once\)$/m);
    assert.equal(text.trimEnd().split('\n').length, 7);
  });

  it('keeps every JSON shape with --json', async () => {
    const partner = await json('admin', 'partner', 'create', '--name', 'Shapes');
    assert.deepEqual(Object.keys(partner), ['id']);
    const key = await json('admin', 'key', 'create', '--name', 'k', '--subject', `org:${org}`, '--permissions', 'read');
    assert.deepEqual(Object.keys(key), ['id', 'key']);
    assert.deepEqual(Object.keys(await json('admin', 'key', 'rotate', key.id)), ['id', 'key', 'previousKeyExpiresAt']);
    assert.deepEqual(Object.keys(await json('admin', 'key', 'revoke', key.id)), ['id', 'status']);
    const keys = await json('admin', 'key', 'list');
    assert.deepEqual(Object.keys(keys), ['items']);
    assert.deepEqual(Object.keys(keys.items[0]).sort(), [
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
    assert.deepEqual(Object.keys(await json('admin', 'admin-key', 'create', '--name', 'a', '--subject', 'instance')), ['id', 'key']);
    const device = await json('admin', 'device', 'create', '--org', org, '--name', 'd');
    assert.deepEqual(Object.keys(device), ['id', 'token']);
    assert.deepEqual(Object.keys(await json('admin', 'device', 'revoke', device.id)), ['id', 'status', 'revokedAt']);
    assert.deepEqual(Object.keys(await json('admin', 'demo')), ['partnerId', 'enterpriseId', 'orgId', 'keyId', 'key', 'adminKeyId', 'adminKey']);
  });
});

describe('CLI output formatting', () => {
  it('prints key: value lines with nulls, lists, subjects and nested counts on one line each', () => {
    assert.equal(
      formatRecord({
        id: 'a',
        subject: { type: 'org', id: 'o1' },
        eventTypes: null,
        allowedOrgIds: ['x', 'y'],
        truncated: false,
        queue: { pending: 1, failed: 0 },
      }),
      ['id: a', 'subject: org:o1', 'eventTypes: all', 'allowedOrgIds: x, y', 'truncated: no', 'queue: pending 1, failed 0'].join('\n'),
    );
  });

  it('escapes control characters so that a value stays on its line and cannot drive the terminal', () => {
    assert.equal(formatRecord({ name: 'a\nb\t\u001b[31mred\u0007' }), 'name: a\\nb\\t\\u001b[31mred\\u0007');
    assert.equal(formatTable([{ error: 'x\r\ny' }], ['error']), 'ERROR\nx\\r\\ny');
  });

  it('aligns table columns and cuts long cells', () => {
    const long = `https://hooks.example.com/${'a'.repeat(80)}`;
    const table = formatTable(
      [
        { id: '1', url: long, lastUsedAt: null },
        { id: '22', url: 'https://x.example.com/', lastUsedAt: '2026-01-01T00:00:00.000Z' },
      ],
      ['id', 'url', 'lastUsedAt'],
    );
    const lines = table.split('\n');
    assert.equal(lines[0], `ID  URL${' '.repeat(61)}  LAST USED AT`);
    assert.equal(lines[1], `1   ${long.slice(0, 63)}…  -`);
    assert.equal(lines[2], `22  https://x.example.com/${' '.repeat(42)}  2026-01-01T00:00:00.000Z`);
  });

  it('renders a result with items as its other fields, then the table; an empty list as (none)', () => {
    assert.equal(formatResult({ subscriptionId: 's', items: [{ a: 1 }] }), 'subscriptionId: s\n\nA\n1');
    assert.equal(formatResult({ items: [] }), '(none)');
  });
});
