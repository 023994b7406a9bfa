/**
 * Webhook delivery of the real server to one receiver, declares over HTTP: does the dispatcher keep up
 * with the declares it acknowledges, and how long after its 201 does each declare's webhook arrive?
 *
 *   node --import tsx bench/webhooks-http.ts                      # BENCH_DURATION (6) s per phase, SQLite
 *   BENCH_WEBHOOK_SECONDS=60 node --import tsx bench/webhooks-http.ts   # the 60 s figures of the README
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/webhooks-http.ts   (a throwaway schema)
 *
 * Knobs: BENCH_WEBHOOK_SECONDS (length of each measured phase; default BENCH_DURATION, else 6),
 * BENCH_WEBHOOK_RATE (the fixed declare rate, default 2000/s), BENCH_WEBHOOK_CONNECTIONS (declaring
 * connections, default 32), BENCH_DRAIN_SECONDS (how long to wait for a backlog, default 60),
 * BENCH_WEBHOOK_TRACE=path (a CSV of the fixed-rate phase: ms since its start, ack → delivery ms),
 * BENCH_WEBHOOK_DISPATCHER=serve|worker (the dispatcher inside `serve`, the default, or in a separate
 * `emergency-api worker` process), and any WEBHOOK_* setting, passed to the server as is. BENCH_JSON=path
 * writes the raw results.
 *
 * `node bin/emergency-api.js serve` runs as a child process (from dist/: `npm run build` first) with one
 * subscription of the org (emergency.declared) to a receiver in a worker thread of this process that
 * answers 204 at once. Declares are POSTed with undici over BENCH_WEBHOOK_CONNECTIONS keep-alive connections.
 *
 *  1. Baselines, same run: bare undici POSTs to the receiver (its capacity, no server), the same POSTs
 *     at the fixed rate (their round-trip latency), and declares/s at saturation with no subscription.
 *  2. Saturation: declares as fast as the server acknowledges them for the phase (after 2 s of warm-up
 *     at the same load). Declares acknowledged/s and first deliveries arriving/s in the same window,
 *     the backlog (acknowledged, not yet arrived) at its end, and the time to drain it.
 *  3. Fixed rate: declares at BENCH_WEBHOOK_RATE/s (open loop) for the phase; the achieved rate and, per
 *     declare, ack → delivery: from the 201 reaching this process to the first arrival of the webhook
 *     carrying its emergencyId at the receiver (one clock: both threads read performance.timeOrigin + now()).
 *
 * Lost: an acknowledged declare whose webhook never arrived (after the drain). Duplicated: a webhook-id
 * that arrived more than once.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { Pool } from 'undici';
import { BIN, cli, startProcess, stopProcess } from './lib/harness.js';
import { benchDatabase, freePort, writeBenchJson } from './lib/support.js';

const SECONDS = Number(process.env.BENCH_WEBHOOK_SECONDS ?? process.env.BENCH_DURATION ?? 6);
const RATE = Number(process.env.BENCH_WEBHOOK_RATE ?? 2000);
const CONNECTIONS = Number(process.env.BENCH_WEBHOOK_CONNECTIONS ?? 32);
const DRAIN_SECONDS = Number(process.env.BENCH_DRAIN_SECONDS ?? 60);
const WARM_UP_SECONDS = 2;
const DISPATCHER = process.env.BENCH_WEBHOOK_DISPATCHER ?? 'serve';
if (DISPATCHER !== 'serve' && DISPATCHER !== 'worker') throw new Error('BENCH_WEBHOOK_DISPATCHER is serve or worker');

const clock = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Receiver thread (plain JavaScript): answers 204 at once; reports the first arrival of every
// emergencyId (with its time) and counts requests and repeated webhook-ids.
const RECEIVER_SOURCE = `
const { createServer } = require('node:http');
const { parentPort } = require('node:worker_threads');
const clock = () => performance.timeOrigin + performance.now();
const seen = new Set();
let arrivals = [];
let total = 0;
let duplicates = 0;
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const arrived = clock();
    total++;
    res.writeHead(204).end();
    if (req.url !== '/hook') return;
    const id = req.headers['webhook-id'];
    if (seen.has(id)) { duplicates++; return; }
    seen.add(id);
    const body = Buffer.concat(chunks).toString('utf8');
    const m = /"emergencyId":"([^"]+)"/.exec(body);
    const c = /"createdAt":"([^"]+)"/.exec(body);
    if (m) arrivals.push(m[1], arrived, c ? Date.parse(c[1]) : NaN);
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
setInterval(() => {
  parentPort.postMessage({ arrivals, total, duplicates });
  arrivals = [];
}, 50);
`;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const round = (x: number, digits = 1) => Number(x.toFixed(digits));

const receiver = new Worker(RECEIVER_SOURCE, { eval: true });
const receiverPort = await new Promise<number>((resolve) => receiver.once('message', (m: { port: number }) => resolve(m.port)));
const arrivedAt = new Map<string, number>();
/** The event's createdAt (taken in the declare's transaction, before its commit), by emergencyId. */
const createdAtOf = new Map<string, number>();
let receivedTotal = 0;
let duplicates = 0;
receiver.on('message', (m: { arrivals?: (string | number)[]; total?: number; duplicates?: number }) => {
  if (!m.arrivals) return;
  receivedTotal = m.total!;
  duplicates = m.duplicates!;
  for (let i = 0; i < m.arrivals.length; i += 3) {
    arrivedAt.set(m.arrivals[i] as string, m.arrivals[i + 1] as number);
    createdAtOf.set(m.arrivals[i] as string, m.arrivals[i + 2] as number);
  }
});
/** Arrivals are reported every 50 ms: wait for the reports covering everything up to now. */
const settle = () => sleep(120);

const db = benchDatabase('webhooks_http');
const port = await freePort();
const passThrough = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => k.startsWith('WEBHOOK_') && v !== undefined)) as Record<string, string>;
const env: Record<string, string> = {
  ...passThrough,
  DATABASE_URL: db.url,
  PORT: String(port),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  RATE_LIMIT_PER_KEY: '1000000000',
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  // The server's own histogram is read from /metrics, which is served to this token only.
  METRICS_TOKEN: 'bench-metrics-token-0123456789',
};
const demo = cli(['admin', 'demo'], env);
const children: ChildProcess[] = [];
// BENCH_SERVER_NODE_ARGS: node flags of the server alone (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
const serverNodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
const serverEnv: Record<string, string> = { ...env };
// With a separate worker, `serve` runs without a dispatcher of its own.
if (DISPATCHER === 'worker') serverEnv.WEBHOOK_DELIVERY_IN_SERVE = 'false';
const service = await startProcess([...serverNodeArgs, BIN, 'serve'], serverEnv, `http://127.0.0.1:${port}/healthz`);
children.push(service);

const declareUrl = `http://127.0.0.1:${port}/api/public/v1/orgs/${demo.orgId}/emergencies`;
const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONNECTIONS, pipelining: 1, keepAliveTimeout: 60_000 });
const declarePath = new URL(declareUrl).pathname;
const declareHeaders = { authorization: `Bearer ${demo.key}`, 'content-type': 'application/json' };
let sequence = 0;
let declareErrors = 0;

/** One declare; resolves with its emergencyId and the time its 201 arrived, or null on an error. */
async function declare(): Promise<{ id: string; ackedAt: number } | null> {
  try {
    const res = await pool.request({
      path: declarePath,
      method: 'POST',
      headers: declareHeaders,
      body: `{"categoryName":"Fire","description":"webhook bench ${sequence++}"}`,
    });
    const text = await res.body.text();
    const ackedAt = clock();
    if (res.statusCode !== 201) {
      declareErrors++;
      return null;
    }
    const m = /"emergencyId":"([^"]+)"/.exec(text);
    return m ? { id: m[1]!, ackedAt } : null;
  } catch {
    declareErrors++;
    return null;
  }
}

/** Closed loop over every connection until `until`; acknowledged declares are handed to `onAck`. */
async function saturate(until: number, onAck: (id: string, at: number) => void): Promise<void> {
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (clock() < until) {
        const r = await declare();
        if (r) onAck(r.id, r.ackedAt);
      }
    }),
  );
}

/** Bare POSTs to the receiver, closed loop, the declaring connection count: requests/s. */
async function bareReceiverRate(seconds: number): Promise<number> {
  const bare = new Pool(`http://127.0.0.1:${receiverPort}`, { connections: CONNECTIONS, keepAliveTimeout: 60_000 });
  const body = JSON.stringify({ eventId: 'x', data: { description: 'x'.repeat(400) } });
  let done = 0;
  const until = clock() + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (clock() < until) {
        const res = await bare.request({ path: '/baseline', method: 'POST', body, headers: { 'content-type': 'application/json' } });
        await res.body.dump();
        done++;
      }
    }),
  );
  await bare.close();
  return done / seconds;
}

/** Bare POSTs to the receiver at `rate`/s (open loop): round-trip latency percentiles. */
async function bareReceiverLatency(rate: number, seconds: number): Promise<{ p50: number; p99: number; max: number }> {
  const bare = new Pool(`http://127.0.0.1:${receiverPort}`, { connections: CONNECTIONS, keepAliveTimeout: 60_000 });
  const body = JSON.stringify({ eventId: 'x', data: { description: 'x'.repeat(400) } });
  const latencies: number[] = [];
  await openLoop(rate, seconds, async () => {
    const t0 = clock();
    const res = await bare.request({ path: '/baseline', method: 'POST', body, headers: { 'content-type': 'application/json' } });
    await res.body.dump();
    latencies.push(clock() - t0);
  });
  await bare.close();
  latencies.sort((a, b) => a - b);
  return { p50: round(percentile(latencies, 50), 2), p99: round(percentile(latencies, 99), 2), max: round(latencies[latencies.length - 1] ?? Number.NaN, 2) };
}

/** Starts `task` `rate` times a second for `seconds` without waiting for earlier ones (a backlog shows). */
async function openLoop(rate: number, seconds: number, task: () => Promise<unknown>): Promise<number> {
  const started = clock();
  const end = started + seconds * 1000;
  const running = new Set<Promise<unknown>>();
  let started_ = 0;
  while (clock() < end) {
    const due = Math.floor(((clock() - started) / 1000) * rate);
    while (started_ < due) {
      const p = task().finally(() => running.delete(p));
      running.add(p);
      started_++;
    }
    await sleep(1);
  }
  await Promise.all(running);
  return started_;
}

// 1. Baselines.
const bareRate = await bareReceiverRate(Math.min(SECONDS, 6));
const bareLatency = await bareReceiverLatency(RATE, Math.min(SECONDS, 6));
await saturate(clock() + WARM_UP_SECONDS * 1000, () => undefined);
let plainAcks = 0;
const plainStart = clock();
await saturate(plainStart + SECONDS * 1000, () => plainAcks++);
const plainDeclaresPerSecond = plainAcks / ((clock() - plainStart) / 1000);

// The subscription, then (with BENCH_WEBHOOK_DISPATCHER=worker) the separate worker.
const subscription = cli(
  ['admin', 'webhook', 'create', '--subject', `org:${demo.orgId}`, '--url', `http://127.0.0.1:${receiverPort}/hook`, '--events', 'emergency.declared'],
  env,
);
if (DISPATCHER === 'worker') {
  const worker = spawn(process.execPath, [BIN, 'worker'], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  process.on('exit', () => worker.kill('SIGKILL'));
  children.push(worker);
}
await sleep(1500);

/** Waits until every id in `acked` has arrived, or the drain limit: the seconds it took from `from`. */
async function drain(acked: Map<string, number>, from: number): Promise<{ seconds: number; missing: number }> {
  const deadline = clock() + DRAIN_SECONDS * 1000;
  for (;;) {
    await settle();
    let missing = 0;
    let last = from;
    for (const id of acked.keys()) {
      const t = arrivedAt.get(id);
      if (t === undefined) missing++;
      else if (t > last) last = t;
    }
    if (missing === 0) return { seconds: round((last - from) / 1000, 2), missing };
    if (clock() > deadline) return { seconds: Number.NaN, missing };
    await sleep(100);
  }
}

// 2. Saturation.
const saturationAcked = new Map<string, number>();
const warmUpEnd = clock() + WARM_UP_SECONDS * 1000;
await saturate(warmUpEnd, (id, at) => saturationAcked.set(id, at));
const windowStart = clock();
const windowEnd = windowStart + SECONDS * 1000;
await saturate(windowEnd, (id, at) => saturationAcked.set(id, at));
const windowSeconds = (clock() - windowStart) / 1000;
await settle();
let ackedInWindow = 0;
for (const at of saturationAcked.values()) if (at >= windowStart && at <= windowEnd) ackedInWindow++;
let arrivedInWindow = 0;
let arrivedByEnd = 0;
for (const id of saturationAcked.keys()) {
  const t = arrivedAt.get(id);
  if (t !== undefined && t <= windowEnd) {
    arrivedByEnd++;
    if (t >= windowStart) arrivedInWindow++;
  }
}
const backlogAtEnd = saturationAcked.size - arrivedByEnd;
const saturationDrain = await drain(saturationAcked, windowEnd);
const saturation = {
  declaresPerSecond: Math.round(ackedInWindow / windowSeconds),
  deliveriesPerSecond: Math.round(arrivedInWindow / windowSeconds),
  backlogAtEnd,
  drainSeconds: saturationDrain.seconds,
  lost: saturationDrain.missing,
};
process.stderr.write(`saturation: ${JSON.stringify(saturation)}\n`);

/** The server's own histogram of event commit → first attempt started (webhook_delivery_lag_seconds), cumulative counts by bucket. */
async function serverLag(): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${env.METRICS_TOKEN}` } })).text();
  const buckets = new Map<string, number>();
  for (const m of text.matchAll(/^webhook_delivery_lag_seconds_bucket\{le="([^"]+)"\} (\d+)/gm)) buckets.set(m[1]!, Number(m[2]));
  return buckets;
}

// 3. Fixed rate.
const lagBefore = await serverLag();
const fixedAcked = new Map<string, number>();
const fixedStart = clock();
const started = await openLoop(RATE, SECONDS, async () => {
  const r = await declare();
  if (r) fixedAcked.set(r.id, r.ackedAt);
});
const fixedEnd = fixedStart + SECONDS * 1000;
const fixedSeconds = (clock() - fixedStart) / 1000;
let ackedInFixedWindow = 0;
for (const at of fixedAcked.values()) if (at <= fixedEnd) ackedInFixedWindow++;
const fixedDrain = await drain(fixedAcked, clock());
// Share of this phase's first attempts started within each bucket of the server's lag histogram.
const lagAfter = await serverLag();
const lagTotal = (lagAfter.get('+Inf') ?? 0) - (lagBefore.get('+Inf') ?? 0);
const serverLagShare = Object.fromEntries(
  [...lagAfter].map(([le, n]) => [`<=${le}s`, lagTotal > 0 ? round((n - (lagBefore.get(le) ?? 0)) / lagTotal, 4) : null]),
);
const delays: number[] = [];
const fromEvent: number[] = [];
for (const [id, at] of fixedAcked) {
  const t = arrivedAt.get(id);
  if (t !== undefined) delays.push(t - at);
  const c = createdAtOf.get(id);
  if (t !== undefined && c !== undefined && Number.isFinite(c)) fromEvent.push(t - c);
}
if (process.env.BENCH_WEBHOOK_TRACE) {
  // One line per declare of the fixed-rate phase: ms since its start, ack → delivery ms.
  const lines = [...fixedAcked].map(([id, at]) => `${(at - fixedStart).toFixed(1)},${((arrivedAt.get(id) ?? Number.NaN) - at).toFixed(1)}`);
  writeFileSync(process.env.BENCH_WEBHOOK_TRACE, `${lines.join('\n')}\n`);
}
delays.sort((a, b) => a - b);
fromEvent.sort((a, b) => a - b);
const fixedRate = {
  offeredPerSecond: RATE,
  declaresStarted: started,
  // Acknowledged within the phase's window, per second (the rest were answered after it).
  achievedPerSecond: Math.round(ackedInFixedWindow / SECONDS),
  acknowledged: fixedAcked.size,
  secondsUntilLastAnswer: round(fixedSeconds, 2),
  ackToDeliveryMs: {
    p50: round(percentile(delays, 50), 2),
    p99: round(percentile(delays, 99), 2),
    max: round(delays[delays.length - 1] ?? Number.NaN, 2),
  },
  // The same arrivals timed from the event's createdAt (millisecond resolution; before the commit and the 201).
  eventCreatedToDeliveryMs: {
    p50: round(percentile(fromEvent, 50), 2),
    p99: round(percentile(fromEvent, 99), 2),
    max: round(fromEvent[fromEvent.length - 1] ?? Number.NaN, 2),
  },
  lost: fixedDrain.missing,
  /** Server side, this phase only: share of first attempts started within each bound after the commit. */
  serverCommitToAttemptShare: serverLagShare,
};
process.stderr.write(`fixed rate: ${JSON.stringify(fixedRate)}\n`);
await settle();

await pool.close();
for (const child of children.reverse()) await stopProcess(child);
await receiver.terminate();
await db.drop();

const result = {
  database: db.dialect,
  dispatcher: DISPATCHER,
  secondsPerPhase: SECONDS,
  connections: CONNECTIONS,
  settings: passThrough,
  subscriptionId: subscription.id,
  baseline: {
    barePostsPerSecond: Math.round(bareRate),
    barePostAtRateMs: bareLatency,
    declaresPerSecondWithoutSubscription: Math.round(plainDeclaresPerSecond),
  },
  saturation,
  fixedRate,
  lost: saturation.lost + fixedRate.lost,
  duplicated: duplicates,
  requestsReceived: receivedTotal,
  declareErrors,
};
console.log(JSON.stringify(result, null, 2));
writeBenchJson(result);
process.exit(0);
