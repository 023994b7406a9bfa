// POST declare and GET emergency of the real service, next to bare baselines measured in the same run.
// Usage: npm run bench:declare   (BENCH_DURATION=seconds, BENCH_CONNECTIONS=n, DATABASE_URL to bench PostgreSQL,
// BENCH_JSON=path to also write {results, ratios, cpuRatios} as JSON)
//
// Every server runs in its own process; besides requests per second, the table reports each server's
// CPU time per request, which other load on the machine hardly skews.
import { join } from 'node:path';
import pg from 'pg';
import { BIN, cli, load, printTable, ROOT, type Result, startProcess, stopProcess, tempSqliteUrl, writeJson } from './lib/harness.js';

const results: Result[] = [];
const declareBody = JSON.stringify({
  categoryName: 'Fire',
  description: 'Smoke on floor 2',
  source: 'bench',
  location: { latitude: 48.85, longitude: 2.35, floorId: 'F2' },
});
const postgresUrl = process.env.DATABASE_URL?.startsWith('postgres') ? process.env.DATABASE_URL : undefined;

const baselineDb = tempSqliteUrl().slice('sqlite:'.length);
const baseline = await startProcess(
  ['--import', 'tsx', join(ROOT, 'bench/baselines/fastify-sqlite.ts')],
  { PORT: '18101', BASELINE_DB: baselineDb },
  'http://127.0.0.1:18101/health',
);
if (!postgresUrl)
  results.push(
    await load(
      'baseline: fastify + 2 sqlite inserts',
      { url: 'http://127.0.0.1:18101/insert', method: 'POST', headers: { 'content-type': 'application/json' }, body: declareBody },
      baseline,
    ),
  );
results.push(await load('baseline: fastify JSON echo', { url: 'http://127.0.0.1:18101/echo' }, baseline));
await stopProcess(baseline);

if (postgresUrl) {
  const pgBaseline = await startProcess(
    ['--import', 'tsx', join(ROOT, 'bench/baselines/pg-insert.ts')],
    { PORT: '18103', BASELINE_PG_URL: postgresUrl },
    'http://127.0.0.1:18103/health',
  );
  results.push(
    await load(
      'baseline: fastify + 2 pg inserts',
      { url: 'http://127.0.0.1:18103/insert', method: 'POST', headers: { 'content-type': 'application/json' }, body: declareBody },
      pgBaseline,
    ),
  );
  await stopProcess(pgBaseline);
}

// On PostgreSQL the service gets a throwaway schema, dropped at the end.
const pgSchema = `bench_declare_${process.pid}`;
const databaseUrl = postgresUrl ? `${postgresUrl}${postgresUrl.includes('?') ? '&' : '?'}schema=${pgSchema}` : tempSqliteUrl();
const env = { DATABASE_URL: databaseUrl, PORT: '18102', LOG_LEVEL: 'warn', RATE_LIMIT_PER_KEY: '1000000' };
const demo = cli(['admin', 'demo'], env);
const service = await startProcess([BIN, 'serve'], env, 'http://127.0.0.1:18102/healthz');
const base = `http://127.0.0.1:18102/api/public/v1/orgs/${demo.orgId}/emergencies`;
const headers = { authorization: `Bearer ${demo.key}`, 'content-type': 'application/json' };
results.push(await load('service: POST declare', { url: base, method: 'POST', headers, body: declareBody }, service));
// The same declare with an Idempotency-Key on every request (a new key each time): the stored answer
// is one more row written in the declare's own transaction.
let keyNumber = 0;
results.push(
  await load(
    'service: POST declare + Idempotency-Key',
    {
      url: base,
      method: 'POST',
      headers,
      body: declareBody,
      requests: [{ setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': `bench-${process.pid}-${keyNumber++}` } }) }],
    },
    service,
  ),
);
const one = await (await fetch(base, { method: 'POST', headers, body: declareBody })).json();
results.push(await load('service: GET emergency', { url: `${base}/${one.emergencyId}`, headers: { authorization: headers.authorization } }, service));
await stopProcess(service);
if (postgresUrl) {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  await client.query(`drop schema if exists ${pgSchema} cascade`);
  await client.end();
}

const ratios: [string, string, string][] = [
  ['declare / baseline two-insert', 'service: POST declare', 'baseline: fastify + 2 sqlite inserts'],
  ['declare with Idempotency-Key / declare', 'service: POST declare + Idempotency-Key', 'service: POST declare'],
  ['GET emergency / baseline echo', 'service: GET emergency', 'baseline: fastify JSON echo'],
];
if (postgresUrl) ratios[0] = ['declare / baseline pg two-insert', 'service: POST declare', 'baseline: fastify + 2 pg inserts'];

console.log(
  `database: ${postgresUrl ? 'postgresql' : 'sqlite'}, ${process.env.BENCH_CONNECTIONS ?? 50} connections, ${process.env.BENCH_DURATION ?? 10} s each`,
);
printTable(results, ratios);
writeJson(process.env.BENCH_JSON, results, ratios);
