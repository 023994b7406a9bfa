// Resident memory of the service process (`emergency-api serve`, in a child process): idle, just after start and
// once settled, and the peak while under the declare load (autocannon, BENCH_CONNECTIONS connections for
// BENCH_DURATION seconds). Baseline, measured in the same run the same way: the bare Fastify + better-sqlite3
// two-insert server.
// Idle is measured twice: 3 s after the server answers (just started) and after BENCH_IDLE_SECONDS (default 30) of
// no requests. Start-up (loading and compiling modules) grows V8's young generation to its largest size; it stays
// resident until V8's memory reducer, which runs once a process has stopped allocating for some seconds, gives it
// back (about 35 MB of the service's RSS, 10 to 20 s after start on these machines). The settled figure is what an
// idle service holds; the target applies to it.
// Targets: < 150 MB idle, < 300 MB under load.
// Usage: node --import tsx bench/rss.ts   (DATABASE_URL=postgres://... for PostgreSQL; BENCH_JSON=path)
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type autocannon from 'autocannon';
import { BIN, cli, CONNECTIONS, DURATION, load, ROOT, type Result, startProcess, stopProcess } from './lib/harness.js';
import { benchDatabase, freePort, rssBytes, writeBenchJson, benchServerEnv } from './lib/support.js';

const MB = 1024 * 1024;
const SETTLE_MS = 3_000;
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 30);
const declareBody = JSON.stringify({
  categoryName: 'Fire',
  description: 'Smoke on floor 2',
  source: 'bench',
  location: { latitude: 48.85, longitude: 2.35, floorId: 'F2' },
});

interface Memory {
  /** 3 s after the server answered. */
  startedMB: number;
  /** After IDLE_SECONDS without requests. */
  idleMB: number;
  peakUnderLoadMB: number;
  afterLoadMB: number;
  load: Result;
}

/** Idle RSS just after start and once settled, then the peak RSS sampled every 100 ms through the load (warm-up included). */
async function measure(child: ChildProcess, name: string, options: autocannon.Options): Promise<Memory> {
  await sleep(SETTLE_MS);
  const started = rssBytes(child.pid!);
  await sleep(Math.max(0, IDLE_SECONDS * 1000 - SETTLE_MS));
  const idle = rssBytes(child.pid!);
  let peak = idle;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssBytes(child.pid!));
  }, 100);
  const result = await load(name, options);
  clearInterval(sampler);
  peak = Math.max(peak, rssBytes(child.pid!));
  await sleep(SETTLE_MS);
  const after = rssBytes(child.pid!);
  const round = (bytes: number) => Math.round((bytes / MB) * 10) / 10;
  return { startedMB: round(started), idleMB: round(idle), peakUnderLoadMB: round(peak), afterLoadMB: round(after), load: result };
}

const baselineDb = benchDatabase('rss_baseline');
const baselinePort = await freePort();
const baseline = await startProcess(
  ['--import', 'tsx', join(ROOT, 'bench/baselines/fastify-sqlite.ts')],
  { PORT: String(baselinePort), BASELINE_DB: join(baselineDb.dir, 'baseline.db') },
  `http://127.0.0.1:${baselinePort}/health`,
);
const bare = await measure(baseline, 'baseline: fastify + 2 sqlite inserts', {
  url: `http://127.0.0.1:${baselinePort}/insert`,
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: declareBody,
});
await stopProcess(baseline);
await baselineDb.drop();

const db = benchDatabase('rss');
const port = await freePort();
const env = benchServerEnv(db, port);
const demo = cli(['admin', 'demo'], env);
const service = await startProcess([BIN, 'serve'], env, `http://127.0.0.1:${port}/healthz`);
const served = await measure(service, 'service: POST declare', {
  url: `http://127.0.0.1:${port}/api/public/v1/orgs/${demo.orgId}/emergencies`,
  method: 'POST',
  headers: { authorization: `Bearer ${demo.key}`, 'content-type': 'application/json' },
  body: declareBody,
});
await stopProcess(service);
await db.drop();

console.log(`database: ${db.dialect === 'postgres' ? 'postgresql' : 'sqlite'}, ${CONNECTIONS} connections, ${DURATION} s of declare load`);
console.log(
  `${'process'.padEnd(38)} ${'started'.padStart(8)} ${'idle MB'.padStart(8)} ${'peak MB'.padStart(8)} ${'after MB'.padStart(8)} ${'req/s'.padStart(7)} ${'non2xx'.padStart(7)}`,
);
for (const [label, m] of [
  ['baseline: fastify + 2 sqlite inserts', bare],
  ['service: emergency-api serve', served],
] as const) {
  console.log(
    `${label.padEnd(38)} ${m.startedMB.toFixed(1).padStart(8)} ${m.idleMB.toFixed(1).padStart(8)} ${m.peakUnderLoadMB.toFixed(1).padStart(8)} ${m.afterLoadMB.toFixed(1).padStart(8)} ${String(m.load.requestsPerSec).padStart(7)} ${String(m.load.non2xx + m.load.errors).padStart(7)}`,
  );
}
console.log(`started: 3 s after the server answered; idle: after ${IDLE_SECONDS} s without requests`);
console.log(`targets: idle < 150 MB (${served.idleMB < 150 ? 'met' : 'NOT met'}), under load < 300 MB (${served.peakUnderLoadMB < 300 ? 'met' : 'NOT met'})`);
writeBenchJson({ database: db.dialect, connections: CONNECTIONS, durationSeconds: DURATION, idleSeconds: IDLE_SECONDS, baseline: bare, service: served });
