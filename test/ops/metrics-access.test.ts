import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { deviceAckLags, unacknowledgedDevices } from '../../src/domain/devices/receipt-gauges.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { declareEmergency } from '../../src/domain/emergencies/service.js';
import { createOrg } from '../../src/domain/orgs/service.js';
import { runCli } from '../helpers/cli.js';
import { createOrgTree, mintKey, scrapeMetrics, startTestServer, type TestServer } from '../helpers/server.js';

/** extensions §9: /metrics is never served to anonymous clients on the API's port, and its label sets are bounded. */

const TOKEN = 'a-metrics-token-of-thirty-two-ch';

async function get(url: string, authorization?: string) {
  const res = await fetch(url, authorization ? { headers: { authorization } } : {});
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

describe('/metrics access', () => {
  const servers: TestServer[] = [];
  const start = async (env: Record<string, string>) => {
    const server = await startTestServer(env, { dispatcher: false });
    servers.push(server);
    return server;
  };
  after(() => Promise.all(servers.map((s) => s.close())));

  it('is not served at all without METRICS_TOKEN or METRICS_PORT: 404 on the API port', async () => {
    const server = await start({ METRICS_TOKEN: '' });
    const res = await get(`${server.url}/metrics`);
    assert.equal(res.status, 404);
    assert.equal(res.json().detail.error, 'not_found');
    assert.ok(!res.text.includes('process_resident_memory_bytes'));
    assert.equal(server.metricsUrl, undefined);
  });

  it('with METRICS_TOKEN, answers the bearer of that token only; anyone else gets 401 with the usual error body', async () => {
    const server = await start({ METRICS_TOKEN: TOKEN });
    const org = await createOrgTree(server.ctx);
    const apiKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    for (const authorization of [undefined, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Bearer ${apiKey}`, TOKEN]) {
      const refused = await get(`${server.url}/metrics`, authorization);
      assert.equal(refused.status, 401, `authorization ${authorization}`);
      assert.equal(refused.json().detail.error, 'unauthenticated');
      assert.equal(refused.headers.get('www-authenticate'), 'Bearer');
      assert.ok(refused.headers.get('x-request-id'));
    }
    const served = await get(`${server.url}/metrics`, `Bearer ${TOKEN}`);
    assert.equal(served.status, 200);
    assert.match(served.headers.get('content-type')!, /text\/plain/);
    assert.match(served.text, /process_resident_memory_bytes/);
  });

  it('with METRICS_PORT, serves /metrics on its own loopback listener, and the API port answers 404', async () => {
    const server = await start({ METRICS_TOKEN: '', METRICS_PORT: '0' });
    assert.ok(server.metricsUrl, 'a metrics listener');
    assert.equal(new URL(server.metricsUrl).hostname, '127.0.0.1');
    assert.notEqual(new URL(server.metricsUrl).port, new URL(server.url).port);
    const served = await get(`${server.metricsUrl}/metrics`);
    assert.equal(served.status, 200);
    assert.match(served.text, /http_requests_total/);
    const elsewhere = await get(`${server.metricsUrl}/api/public/v1/openapi.json`);
    assert.equal(elsewhere.status, 404);
    assert.equal(elsewhere.json().detail.error, 'not_found');
    const onApiPort = await get(`${server.url}/metrics`);
    assert.equal(onApiPort.status, 404);
    assert.equal(onApiPort.json().detail.error, 'not_found');
  });

  it('with both, the API port answers 404 and the metrics listener wants the token too', async () => {
    const server = await start({ METRICS_TOKEN: TOKEN, METRICS_PORT: '0' });
    assert.equal((await get(`${server.url}/metrics`, `Bearer ${TOKEN}`)).status, 404);
    const anonymous = await get(`${server.metricsUrl}/metrics`);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.json().detail.error, 'unauthenticated');
    assert.equal((await get(`${server.metricsUrl}/metrics`, `Bearer ${TOKEN}`)).status, 200);
  });
});

describe('metrics listeners other machines can reach (extensions §13)', () => {
  const servers: TestServer[] = [];
  after(() => Promise.all(servers.map((s) => s.close())));

  it('refuse to start without METRICS_TOKEN when METRICS_HOST is not loopback, naming the setting (exit 78), for one process or several', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'emergency-api-metrics-'));
    try {
      const env = { METRICS_PORT: '0', METRICS_HOST: '0.0.0.0', METRICS_TOKEN: undefined, DATABASE_URL: undefined };
      const [one, several] = await Promise.all([runCli(['serve'], env, { cwd }), runCli(['serve', '--processes', '2'], env, { cwd })]);
      for (const run of [one, several]) {
        assert.equal(run.code, 78, run.stderr);
        assert.match(run.stderr, /^error: Invalid configuration:\n {2}METRICS_TOKEN: required when METRICS_HOST \(0\.0\.0\.0\) is not a loopback address/);
      }
      assert.deepEqual(readdirSync(cwd), [], 'nothing opened');
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('on a non-loopback METRICS_HOST answer the token only; a loopback name needs none', async () => {
    const open = await startTestServer({ METRICS_TOKEN: TOKEN, METRICS_PORT: '0', METRICS_HOST: '0.0.0.0' }, { dispatcher: false });
    servers.push(open);
    const listener = open.metricsUrl!.replace('0.0.0.0', '127.0.0.1');
    const anonymous = await get(`${listener}/metrics`);
    assert.equal(anonymous.status, 401);
    assert.ok(!anonymous.text.includes('org_id'));
    assert.equal((await get(`${listener}/metrics`, `Bearer ${TOKEN}`)).status, 200);
    const local = await startTestServer({ METRICS_TOKEN: '', METRICS_PORT: '0', METRICS_HOST: 'localhost' }, { dispatcher: false });
    servers.push(local);
    assert.equal((await get(`${local.metricsUrl}/metrics`)).status, 200);
  });
});

describe('/metrics label bounds and database cost', () => {
  let server: TestServer;
  const ORGS = 51;

  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
    // 51 orgs, each with one active device that acknowledged nothing and two open emergencies:
    // 51 lagging orgs and 102 open emergencies, each with one unacknowledged device.
    const tree = await createOrgTree(server.ctx);
    for (let i = 0; i < ORGS; i++) {
      const orgId = i === 0 ? tree.orgId : (await createOrg(server.ctx, operatorCaller(), tree.enterpriseId, { name: `Site ${i}` })).orgId;
      await createDevice(server.ctx, operatorCaller(), orgId, { name: 'Front desk' });
      for (let n = 0; n < 2; n++) await declareEmergency(server.ctx, operatorCaller(), orgId, { description: `drill ${n}` });
    }
  });
  after(() => server.close());

  it('labels at most 50 orgs and 100 emergencies, and summarises the rest in one `other` series each', async () => {
    const text = await scrapeMetrics(server.url);
    const lags = [...text.matchAll(/^device_ack_lag_events\{org_id="([^"]+)"\} (\d+)$/gm)];
    assert.equal(lags.length, 51, 'the 50 orgs furthest behind and `other`');
    assert.deepEqual(
      lags.filter((m) => m[1] === 'other').map((m) => Number(m[2])),
      [2],
      'the largest lag of the orgs left out',
    );
    assert.ok(lags.every((m) => Number(m[2]) === 2));
    const pending = [...text.matchAll(/^emergency_unacknowledged_devices\{org_id="([^"]+)",emergency_id="([^"]+)"\} (\d+)$/gm)];
    assert.equal(pending.length, 101, 'the 100 emergencies with the most unacknowledged devices and `other`');
    const other = pending.filter((m) => m[1] === 'other' && m[2] === 'other');
    assert.deepEqual(
      other.map((m) => Number(m[3])),
      [2],
      'the two emergencies left out, one device each',
    );
    assert.equal(
      pending.reduce((sum, m) => sum + Number(m[3]), 0),
      102,
      'the series add up to every unacknowledged device',
    );
  });

  it('serves concurrent scrapes from one database read', async () => {
    let reads = 0;
    const db = server.ctx.db.db;
    const slow = () => new Promise((resolve) => setTimeout(resolve, 200));
    // Counts the reads the scrapes cause (the real queries, made slow so that every scrape arrives while the first read runs).
    server.ctx.metrics.readReceiptsWith({
      ackLags: async (limit) => {
        reads++;
        await slow();
        return deviceAckLags(db, limit);
      },
      unacknowledged: (limit) => unacknowledgedDevices(db, limit),
    });
    const texts = await Promise.all(Array.from({ length: 8 }, () => scrapeMetrics(server.url)));
    assert.equal(reads, 1);
    for (const text of texts) assert.match(text, /^device_ack_lag_events\{org_id="other"\} 2$/m);
  });
});
