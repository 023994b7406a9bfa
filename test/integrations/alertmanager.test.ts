import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { client } from '../helpers/http.js';
import { freePort } from '../helpers/child-server.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

const ALERTMANAGER = '/usr/bin/prometheus-alertmanager';
const AMTOOL = '/usr/bin/amtool';
const run = promisify(execFile);

/** A real Alertmanager (Debian's prometheus-alertmanager) with this service as its webhook receiver (extensions §12). */
describe('Prometheus Alertmanager declares and resolves emergencies', {
  skip: existsSync(ALERTMANAGER) && existsSync(AMTOOL) ? false : 'Alertmanager is not installed: apt-get install prometheus-alertmanager',
}, () => {
  let server: TestServer;
  let org: OrgFixture;
  let alertmanager: ChildProcess;
  let amUrl: string;
  let dir: string;
  let api: ReturnType<typeof client>;

  before(async () => {
    server = await startTestServer({}, { dispatcher: false, deadlines: false });
    org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['read', 'write'] });
    api = client(server.base, key);
    dir = mkdtempSync(join(tmpdir(), 'alertmanager-'));
    const port = await freePort();
    amUrl = `http://127.0.0.1:${port}`;
    writeFileSync(
      join(dir, 'alertmanager.yml'),
      [
        'route:',
        '  receiver: emergency-api',
        '  group_by: [alertname]',
        '  group_wait: 0s',
        '  group_interval: 1s',
        '  repeat_interval: 2s',
        'receivers:',
        '  - name: emergency-api',
        '    webhook_configs:',
        `      - url: ${server.base}/orgs/${org.orgId}/integrations/alertmanager`,
        '        send_resolved: true',
        '        http_config:',
        '          authorization:',
        `            credentials: ${key}`,
        '',
      ].join('\n'),
    );
    alertmanager = spawn(
      ALERTMANAGER,
      [`--config.file=${join(dir, 'alertmanager.yml')}`, `--storage.path=${dir}`, `--web.listen-address=127.0.0.1:${port}`, '--cluster.listen-address='],
      { stdio: 'ignore' },
    );
    for (let i = 0; i < 100; i++) {
      if ((await fetch(`${amUrl}/-/ready`).catch(() => null))?.status === 200) return;
      await sleep(100);
    }
    throw new Error('Alertmanager did not start');
  });
  after(async () => {
    alertmanager?.kill();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const amtool = (...args: string[]) => run(AMTOOL, ['alert', 'add', ...args, `--alertmanager.url=${amUrl}`]);
  const fromAlertmanager = async () => (await api.get(`/orgs/${org.orgId}/emergencies?limit=50`)).body.items.filter((e: any) => e.source === 'alertmanager');
  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    for (let i = 0; i < 150; i++) {
      const value = await read();
      if (done(value)) return value;
      await sleep(100);
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  it('a firing alert declares once (repeats change nothing), and its resolution resolves it', async () => {
    const startsAt = new Date(Date.now() - 60_000).toISOString();
    const diskFull = [
      'alertname=DiskFull',
      'severity=fire',
      'instance=control-room-1',
      '--annotation=summary=Disk full on the control room server',
      `--start=${startsAt}`,
    ];
    await amtool(...diskFull);
    const [declared] = await until('the declare', fromAlertmanager, (list) => list.length === 1);
    assert.equal(declared.description, 'Disk full on the control room server');
    assert.equal(declared.category.name, 'Fire');
    assert.match(declared.externalId, /^am:[0-9a-f]+$/);
    assert.equal(declared.occurredAt, startsAt);
    assert.equal(declared.metadata.alertmanager.labels.instance, 'control-room-1');
    assert.equal(declared.status, 'declared');

    // Alertmanager sends the group again every repeat_interval (2 s): nothing changes.
    await sleep(4_500);
    const later = await fromAlertmanager();
    assert.equal(later.length, 1);
    const events = (await api.get(`/orgs/${org.orgId}/emergencies/${declared.emergencyId}/events`)).body.items;
    assert.equal(events.length, 1);

    await amtool(...diskFull, `--end=${new Date(Date.now() - 1000).toISOString()}`);
    const [resolved] = await until('the resolution', fromAlertmanager, (list) => list[0]?.status === 'resolved');
    assert.match(resolved.resolutionNote, /Resolved in Alertmanager/);
  });

  it('honours Idempotency-Key: a retry is answered as the first request was', async () => {
    const body = {
      version: '4',
      status: 'firing',
      receiver: 'retry',
      alerts: [{ status: 'firing', labels: { alertname: 'Retry' }, startsAt: '2026-12-07T18:00:00Z', fingerprint: 'feedbeef' }],
    };
    const first = await api.post(`/orgs/${org.orgId}/integrations/alertmanager`, body, { 'idempotency-key': 'am-retry-1' });
    assert.deepEqual(first.body, { declared: 1, resolved: 0, unchanged: 0 });
    const again = await api.post(`/orgs/${org.orgId}/integrations/alertmanager`, body, { 'idempotency-key': 'am-retry-1' });
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    const fresh = await api.post(`/orgs/${org.orgId}/integrations/alertmanager`, body);
    assert.deepEqual(fresh.body, { declared: 0, resolved: 0, unchanged: 1 });
  });

  it('a body Alertmanager never sends is refused with the field at fault', async () => {
    const bad = await api.post(`/orgs/${org.orgId}/integrations/alertmanager`, {
      version: '4',
      status: 'firing',
      receiver: 'x',
      alerts: [{ status: 'firing', labels: {}, startsAt: 'yesterday', fingerprint: 'ab' }],
    });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['body', 'alerts', 0, 'startsAt']);
    const tooMany = await api.post(`/orgs/${org.orgId}/integrations/alertmanager`, {
      version: '4',
      status: 'firing',
      receiver: 'x',
      alerts: Array.from({ length: 1001 }, (_, i) => ({ status: 'firing', labels: {}, startsAt: '2026-12-07T18:00:00Z', fingerprint: `f${i}` })),
    });
    assert.equal(tooMany.status, 422);
  });
});
