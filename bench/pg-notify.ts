// PostgreSQL declare throughput under concurrency, where the commit's wake-up of other instances
// (NOTIFY) matters: the service's POST declare into one org and spread over several orgs, at 50 and
// 200 connections, next to a bare two-insert transaction with its NOTIFY inside the transaction and
// after the commit, measured in the same run.
//
// PostgreSQL takes an instance-wide lock at the commit of every transaction that has a pending
// notification and holds it until the commit is flushed, so such commits cannot share a flush.
//
// The service sends its NOTIFY only while another instance listens (a lone instance needs none), so
// it is measured alone and with a second instance's LISTEN connection open (what a deployment of
// several instances pays).
//
// Usage: DATABASE_URL=postgres://... node --import tsx bench/pg-notify.ts
//   BENCH_DURATION=seconds per measurement (default 10), BENCH_PG_CONNECTIONS=50,200, BENCH_ORGS=16,
//   BENCH_PARTS=bare,service (default both), BENCH_JSON=path for the raw results.
// Every server runs in its own process; the table also reports each one's CPU time per request.
import { join } from 'node:path';
import pg from 'pg';
import { PG_EVENT_CHANNEL } from '../src/db/postgres/events.js';
import { listenerApplicationName } from '../src/db/postgres/notifier.js';
import { BIN, cli, load, printTable, ROOT, type Result, startProcess, stopProcess } from './lib/harness.js';
import { benchDatabase, freePort, writeBenchJson } from './lib/support.js';

const postgresUrl = process.env.DATABASE_URL?.startsWith('postgres') ? process.env.DATABASE_URL : undefined;
if (!postgresUrl) {
  console.log('bench/pg-notify.ts measures PostgreSQL only: set DATABASE_URL=postgres://...');
  writeBenchJson({ skipped: 'PostgreSQL only', results: [] });
  process.exit(0);
}
const connectionCounts = (process.env.BENCH_PG_CONNECTIONS ?? '50,200').split(',').map(Number);
const orgCount = Number(process.env.BENCH_ORGS ?? 16);
const parts = (process.env.BENCH_PARTS ?? 'bare,service').split(',');
const body = (n: number | string) =>
  JSON.stringify({ categoryName: 'Uncategorized', description: `Smoke on floor ${n}`, source: 'bench', location: { latitude: 48.85, longitude: 2.35 } });
const results: Result[] = [];

if (parts.includes('bare')) {
  // The database URL without the service's schema: the baseline makes a schema of its own.
  const bareUrl = new URL(postgresUrl);
  bareUrl.searchParams.delete('schema');
  for (const notify of ['inside', 'after'] as const) {
    const port = await freePort();
    const bare = await startProcess(
      ['--import', 'tsx', join(ROOT, 'bench/baselines/pg-insert.ts')],
      { PORT: String(port), BASELINE_PG_URL: bareUrl.toString(), BASELINE_NOTIFY: notify },
      `http://127.0.0.1:${port}/health`,
    );
    for (const connections of connectionCounts) {
      results.push(
        await load(
          `bare 2 pg inserts, NOTIFY ${notify === 'inside' ? 'in txn' : 'after'}, c${connections}`,
          { url: `http://127.0.0.1:${port}/insert`, method: 'POST', headers: { 'content-type': 'application/json' }, body: body(1), connections },
          bare,
        ),
      );
    }
    await stopProcess(bare);
  }
}

if (parts.includes('service')) {
  const database = benchDatabase('pgnotify');
  const port = await freePort();
  const env = { DATABASE_URL: database.url, PORT: String(port), LOG_LEVEL: 'warn', RATE_LIMIT_PER_KEY: '1000000' };
  const demo = cli(['admin', 'demo'], env);
  const service = await startProcess([BIN, 'serve'], env, `http://127.0.0.1:${port}/healthz`);
  try {
    // More orgs of the demo enterprise, and one key of the enterprise that may declare in each of them.
    const admin = async (path: string, payload: unknown) => {
      const res = await fetch(`http://127.0.0.1:${port}/api/admin/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${demo.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      });
      if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    const orgIds: string[] = [demo.orgId];
    while (orgIds.length < orgCount) orgIds.push((await admin(`/enterprises/${demo.enterpriseId}/orgs`, { name: `Bench org ${orgIds.length}` })).orgId);
    const { key } = await admin('/api-keys', {
      name: 'bench',
      subject: { type: 'enterprise', id: demo.enterpriseId },
      permissions: ['read', 'write'],
    });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const declares = (orgs: string[], connections: number) => {
      let n = 0;
      return {
        url: `http://127.0.0.1:${port}/api/public/v1/orgs/${orgs[0]}/emergencies`,
        method: 'POST' as const,
        headers,
        connections,
        requests: [{ setupRequest: (request: any) => ({ ...request, path: `/api/public/v1/orgs/${orgs[n++ % orgs.length]}/emergencies`, body: body(n) }) }],
      };
    };
    const measure = async (setting: string) => {
      for (const [label, orgs] of [
        ['1 org', [demo.orgId]],
        [`${orgCount} orgs`, orgIds],
      ] as const) {
        for (const connections of connectionCounts) {
          results.push(await load(`service: POST declare, ${label}, c${connections}, ${setting}`, declares([...orgs], connections), service));
        }
      }
    };
    await measure('alone');
    // Another instance of the same schema: a LISTEN connection named as the service names its own.
    const schema = new URL(database.url).searchParams.get('schema') ?? 'public';
    const peer = new pg.Client({ connectionString: postgresUrl, application_name: listenerApplicationName(schema, 'bench-peer') });
    await peer.connect();
    let heard = 0;
    peer.on('notification', () => heard++);
    await peer.query(`LISTEN ${PG_EVENT_CHANNEL}`);
    // The service looks for other listeners at most once a second.
    await new Promise((r) => setTimeout(r, 1500));
    try {
      await measure('another instance listening');
    } finally {
      await peer.end();
    }
    if (heard === 0) throw new Error('the service sent no NOTIFY with another instance listening');
    console.log(`notifications heard by the second instance: ${heard}`);
  } finally {
    await stopProcess(service);
    await database.drop();
  }
}

console.log(`PostgreSQL, ${process.env.BENCH_DURATION ?? 10} s per measurement, connections ${connectionCounts.join(' and ')}`);
const ratios: [string, string, string][] = connectionCounts.flatMap((c): [string, string, string][] => [
  [`bare: NOTIFY after / in txn, c${c}`, `bare 2 pg inserts, NOTIFY after, c${c}`, `bare 2 pg inserts, NOTIFY in txn, c${c}`],
  [`service 1 org: listened / alone, c${c}`, `service: POST declare, 1 org, c${c}, another instance listening`, `service: POST declare, 1 org, c${c}, alone`],
]);
printTable(results, ratios);
writeBenchJson({ connections: connectionCounts, orgs: orgCount, durationSeconds: Number(process.env.BENCH_DURATION ?? 10), results });
