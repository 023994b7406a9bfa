/**
 * create_emergency over the tool server (tools/call on POST /mcp, JSON response) against REST
 * declare (POST /orgs/{org}/emergencies), in the same run on one server and one SQLite database.
 * Both do the same service call (one transaction: emergency row, event row, audit row); the
 * difference is the MCP transport and JSON-RPC layer. Target: MCP >= 0.5x REST.
 *
 *   node --import tsx bench/mcp.ts [--duration 12] [--rounds 4] [--connections 50]
 *
 * The server runs in its own process (as `emergency-api serve`), so the load generator does not
 * share its event loop. The machine is shared and noisy, so the two paths alternate in short rounds
 * (duration/rounds seconds each) and the ratio is taken on the medians.
 *
 * Also: BENCH_DATABASE_URL=postgres://... to run on PostgreSQL (a throwaway schema);
 * BENCH_JSON=path writes the results as JSON (read by bench/run-all.ts).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createContext } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { operatorCaller } from '../src/domain/access/principal.js';
import { createApiKey } from '../src/domain/keys/service.js';
import { createEnterprise, createOrg, createPartner } from '../src/domain/orgs/service.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '12' },
    rounds: { type: 'string', default: '4' },
    connections: { type: 'string', default: '50' },
  },
});
const duration = Number(values.duration);
const rounds = Math.max(1, Number(values.rounds));
const connections = Number(values.connections);

const dir = mkdtempSync(join(tmpdir(), 'bench-mcp-'));
const databaseUrl = process.env.BENCH_DATABASE_URL
  ? `${process.env.BENCH_DATABASE_URL}${process.env.BENCH_DATABASE_URL.includes('?') ? '&' : '?'}schema=bench_mcp_${process.pid}`
  : `sqlite:${join(dir, 'bench.db')}`;
const ctx = createContext(loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl }));
await migrateToLatest(ctx.db);
const operator = operatorCaller('bench');
const partner = await createPartner(ctx, operatorCaller(), { name: 'Bench partner' });
const enterprise = await createEnterprise(ctx, operatorCaller(), partner.partnerId, { name: 'Bench enterprise' });
const org = await createOrg(ctx, operatorCaller(), enterprise.enterpriseId, { name: 'Bench org' });
const { key } = await createApiKey(ctx, operator, {
  name: 'bench',
  subjectType: 'org',
  subjectId: org.orgId,
  permissions: ['read', 'write'],
});

const port = await new Promise<number>((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const address = probe.address();
    probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
  });
});
const serverUrl = `http://127.0.0.1:${port}`;
const child = spawn(process.execPath, [fileURLToPath(new URL('../bin/emergency-api.js', import.meta.url)), 'serve'], {
  env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent', RATE_LIMIT_PER_KEY: '1000000' },
  stdio: ['ignore', 'ignore', 'inherit'],
});
for (let i = 0; ; i++) {
  const ready = await fetch(`${serverUrl}/readyz`)
    .then((r) => r.ok)
    .catch(() => false);
  if (ready) break;
  if (i > 100) throw new Error('server did not become ready');
  await sleep(100);
}

const declareBody = { description: 'Benchmark alarm', source: 'bench', location: { floorId: 'F1' } };
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

const rest: autocannon.Options = {
  url: `${serverUrl}/api/public/v1/orgs/${org.orgId}/emergencies`,
  method: 'POST',
  headers: auth,
  body: JSON.stringify(declareBody),
};
const mcp: autocannon.Options = {
  url: `${serverUrl}/mcp`,
  method: 'POST',
  headers: { ...auth, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'create_emergency', arguments: { orgId: org.orgId, ...declareBody } },
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

/** CPU time (user + system, ms) the server process has used so far: a cost per request that load on other cores hardly skews. */
function serverCpuMs(): number {
  const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in USER_HZ (100)
}

async function run(title: string, options: autocannon.Options, seconds: number) {
  const cpuBefore = serverCpuMs();
  const result = await autocannon({ ...options, title, connections, duration: seconds });
  const cpuMs = serverCpuMs() - cpuBefore;
  const bad = result.non2xx + result.errors + result.timeouts;
  return {
    title,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    bad,
    cpuUsPerRequest: (cpuMs * 1000) / result.requests.total,
  };
}

// Warm both paths (JIT, SQLite page cache), then alternate short rounds so neither path gets all of a quiet or busy moment.
await run('warm rest', rest, 2);
await run('warm mcp', mcp, 2);
const samples: { rest: Awaited<ReturnType<typeof run>>[]; mcp: Awaited<ReturnType<typeof run>>[] } = { rest: [], mcp: [] };
for (let i = 0; i < rounds; i++) {
  samples.rest.push(await run('REST declare', rest, duration / rounds));
  samples.mcp.push(await run('MCP create_emergency', mcp, duration / rounds));
}
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const summarize = (title: string, rs: Awaited<ReturnType<typeof run>>[]) => ({
  title,
  rps: median(rs.map((r) => r.rps)),
  p50: median(rs.map((r) => r.p50)),
  p99: median(rs.map((r) => r.p99)),
  bad: rs.reduce((n, r) => n + r.bad, 0),
  cpu: median(rs.map((r) => r.cpuUsPerRequest)),
  perRound: rs.map((r) => r.rps.toFixed(0)).join(' '),
});
const results = [summarize('REST declare', samples.rest), summarize('MCP create_emergency', samples.mcp)];

const emergencies = await ctx.db.db
  .selectFrom('emergencies')
  .select((eb) => eb.fn.countAll<number>().as('n'))
  .where('org_id', '=', org.orgId)
  .executeTakeFirstOrThrow();

console.log(
  `\n${databaseUrl.startsWith('sqlite') ? 'SQLite' : 'PostgreSQL'}, ${connections} connections, ${rounds} alternating rounds, ${duration} s per path`,
);
console.log('path                     req/s (median)  p50 ms  p99 ms  server CPU us/req  non-2xx/errors  req/s per round');
for (const r of results) {
  console.log(
    `${r.title.padEnd(24)} ${r.rps.toFixed(0).padStart(14)}  ${String(r.p50).padStart(6)}  ${String(r.p99).padStart(6)}  ${r.cpu.toFixed(0).padStart(17)}  ${String(r.bad).padStart(14)}  ${r.perRound}`,
  );
}
const [restResult, mcpResult] = results;
console.log(`MCP / REST throughput ratio (medians): ${(mcpResult!.rps / restResult!.rps).toFixed(2)}x (target >= 0.5x)`);
console.log(`server CPU per request, MCP / REST: ${(mcpResult!.cpu / restResult!.cpu).toFixed(2)}x`);
console.log(`per round: ${samples.mcp.map((m, i) => (m.rps / samples.rest[i]!.rps).toFixed(2)).join(' ')}`);
console.log(`emergencies written: ${Number(emergencies.n)}`);
if (process.env.BENCH_JSON) {
  writeFileSync(
    process.env.BENCH_JSON,
    JSON.stringify({
      database: databaseUrl.startsWith('sqlite') ? 'sqlite' : 'postgres',
      connections,
      rounds,
      durationSeconds: duration,
      rest: restResult,
      mcp: mcpResult,
      ratio: mcpResult!.rps / restResult!.rps,
    }),
  );
}

child.kill('SIGTERM');
await new Promise((resolve) => child.once('exit', resolve));
await ctx.db.close();
if (databaseUrl.startsWith('postgres')) {
  const pg = await import('pg');
  const client = new pg.default.Client({ connectionString: process.env.BENCH_DATABASE_URL });
  await client.connect();
  await client.query(`drop schema if exists bench_mcp_${process.pid} cascade`);
  await client.end();
}
rmSync(dir, { recursive: true, force: true });
