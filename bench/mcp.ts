/**
 * create_emergency over the tool server (tools/call on POST /mcp, JSON response) against REST
 * declare (POST /orgs/{org}/emergencies), in the same run on one server and one SQLite database.
 * Both do the same service call (one transaction: emergency row, event row, audit row); the
 * difference is the MCP transport and JSON-RPC layer. Target: MCP >= 0.5x REST.
 *
 *   node --import tsx bench/mcp.ts [--duration 10] [--connections 50]
 *
 * Also: BENCH_DATABASE_URL=postgres://... to run on PostgreSQL (a throwaway schema).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config.js';
import { operatorCaller } from '../src/domain/access/principal.js';
import { createApiKey } from '../src/domain/keys/service.js';
import { createEnterprise, createOrg, createPartner } from '../src/domain/orgs/service.js';
import { startServer } from '../src/server.js';

const { values } = parseArgs({
  options: { duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '50' } },
});
const duration = Number(values.duration);
const connections = Number(values.connections);

const dir = mkdtempSync(join(tmpdir(), 'bench-mcp-'));
const databaseUrl = process.env.BENCH_DATABASE_URL
  ? `${process.env.BENCH_DATABASE_URL}${process.env.BENCH_DATABASE_URL.includes('?') ? '&' : '?'}schema=bench_mcp_${process.pid}`
  : `sqlite:${join(dir, 'bench.db')}`;
const server = await startServer(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl }));
const ctx = server.ctx;
const operator = operatorCaller('bench');
const partner = await createPartner(ctx, { name: 'Bench partner' });
const enterprise = await createEnterprise(ctx, { partnerId: partner.id, name: 'Bench enterprise' });
const org = await createOrg(ctx, { enterpriseId: enterprise.id, name: 'Bench org' });
const { key } = await createApiKey(ctx, operator, {
  name: 'bench',
  subjectType: 'org',
  subjectId: org.id,
  permissions: ['read', 'write'],
});

const declareBody = { description: 'Benchmark alarm', source: 'bench', location: { floorId: 'F1' } };
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

const rest: autocannon.Options = {
  url: `${server.url}/api/public/v1/orgs/${org.id}/emergencies`,
  method: 'POST',
  headers: auth,
  body: JSON.stringify(declareBody),
};
const mcp: autocannon.Options = {
  url: `${server.url}/mcp`,
  method: 'POST',
  headers: { ...auth, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'create_emergency', arguments: { orgId: org.id, ...declareBody } },
  }),
};

/** One call of each before measuring, so a broken setup fails loudly instead of benchmarking errors. */
async function check(options: autocannon.Options, expectStatus: number, ok: (body: any) => boolean) {
  const res = await fetch(options.url, { method: 'POST', headers: options.headers as Record<string, string>, body: options.body as string });
  const body = await res.json();
  if (res.status !== expectStatus || !ok(body)) throw new Error(`sanity check failed: ${res.status} ${JSON.stringify(body)}`);
}
await check(rest, 201, (b) => b.status === 'declared');
await check(mcp, 200, (b) => b.result && !b.result.isError && b.result.structuredContent.status === 'declared');

async function run(title: string, options: autocannon.Options, seconds: number) {
  const result = await autocannon({ ...options, title, connections, duration: seconds });
  const bad = result.non2xx + result.errors + result.timeouts;
  return { title, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, bad };
}

// Warm both paths (JIT, SQLite page cache), then measure; alternate so neither gets a colder machine.
await run('warm rest', rest, 2);
await run('warm mcp', mcp, 2);
const results = [await run('REST declare', rest, duration), await run('MCP create_emergency', mcp, duration)];

const emergencies = await ctx.db.db
  .selectFrom('emergencies')
  .select((eb) => eb.fn.countAll<number>().as('n'))
  .where('org_id', '=', org.id)
  .executeTakeFirstOrThrow();

console.log(`\n${databaseUrl.startsWith('sqlite') ? 'SQLite' : 'PostgreSQL'}, ${connections} connections, ${duration} s each`);
console.log('path                     req/s     p50 ms   p99 ms   non-2xx/errors');
for (const r of results) {
  console.log(`${r.title.padEnd(24)} ${r.rps.toFixed(0).padStart(7)}   ${String(r.p50).padStart(6)}   ${String(r.p99).padStart(6)}   ${r.bad}`);
}
const [restResult, mcpResult] = results;
console.log(`MCP / REST throughput ratio: ${(mcpResult!.rps / restResult!.rps).toFixed(2)}x (target >= 0.5x)`);
console.log(`emergencies written: ${Number(emergencies.n)}`);

await server.stop();
if (databaseUrl.startsWith('postgres')) {
  const pg = await import('pg');
  const client = new pg.default.Client({ connectionString: process.env.BENCH_DATABASE_URL });
  await client.connect();
  await client.query(`drop schema if exists bench_mcp_${process.pid} cascade`);
  await client.end();
}
rmSync(dir, { recursive: true, force: true });
