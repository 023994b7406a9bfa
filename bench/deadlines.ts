// Acknowledgement deadlines at fleet scale: what the deadline work costs per declare, against the same run
// without deadlines, and how late the overdue events come.
//   - one org with BENCH_DEADLINE_DEVICES (default 1,000) base stations, every one connected over WebSocket
//     through the C device readers (bench/lib/device-swarm.ts); BENCH_SILENT_SHARE of them (default 10 %) never
//     acknowledge anything, the others acknowledge every event frame at once; all answer the server's pings;
//   - after a warm-up, two phases of BENCH_DEADLINE_DECLARES declares (default 100), offered one at a time at
//     BENCH_DEADLINE_RATE declares/s (default 10) over one kept-alive connection: first without a deadline, then
//     with the org's `ackDeadlineSeconds` at BENCH_DEADLINE_SECONDS (default 5), so each declare is re-sent
//     half-way to the silent devices and gets one emergency.delivery_overdue naming them (appended to the stream,
//     so sent to every device and acknowledged by the acking ones);
//   - cost: the server's CPU time (the `serve` child, all threads) over the same window in both phases, from the
//     first declare to the deadline of the last one plus one second (or to the last overdue frame reaching every
//     acking device, if later), plus two seconds, divided by the declares; and the declares' round trips;
//   - lateness: for each overdue event, its `createdAt` minus its deadline (the watched event's `createdAt` plus
//     the deadline) and the arrival of its frame at the first device (its commit and first write) minus the deadline;
//   - the watch that follows: the server's CPU per second over BENCH_DEADLINE_IDLE_SECONDS (default 10) with
//     no declares, before the deadline phase and after it, while its overdue deliveries stay incomplete.
// The without-deadline phase runs first because overdue deliveries stay watched afterwards.
// Usage: node --import tsx bench/deadlines.ts
//   (DATABASE_URL=postgres://... benches the service on PostgreSQL in a throwaway schema; BENCH_JSON=path writes
//   the raw results as JSON)
import { type ChildProcess, spawn } from 'node:child_process';
import { BIN, cli, processCpuMs, stopProcess, waitForHttp } from './lib/harness.js';
import { type Arrivals, DeviceSwarm, monotonicMs } from './lib/device-swarm.js';
import { RawHttpConnection } from './lib/raw-http.js';
import { benchDatabase, benchServerEnv, freePort, writeBenchJson } from './lib/support.js';

const DEVICES = Number(process.env.BENCH_DEADLINE_DEVICES ?? 1_000);
const SILENT = Math.round(DEVICES * Number(process.env.BENCH_SILENT_SHARE ?? 0.1));
const DECLARES = Number(process.env.BENCH_DEADLINE_DECLARES ?? 100);
const DEADLINE_SECONDS = Number(process.env.BENCH_DEADLINE_SECONDS ?? 5);
const RATE = Number(process.env.BENCH_DEADLINE_RATE ?? 10);
const IDLE_SECONDS = Number(process.env.BENCH_DEADLINE_IDLE_SECONDS ?? 10);
/** Declares before the measured phases, without a deadline, so the declare path runs optimized in both. */
const WARM_UP = 50;
/** Added to every phase's window after its last expected frame: the acks of the last frames are flushed in it. */
const SETTLE_MS = 2_000;
/** Reader processes of the acknowledging devices (one per core here); the silent ones take one more. */
const READERS = Number(process.env.BENCH_READERS ?? 2);
const METRICS_TOKEN = 'bench-metrics-token-0123456789';
const DECLARE_BODY = JSON.stringify({ description: 'bench', location: { floorId: '3' } });

if (!(DEVICES >= 2 && SILENT >= 1 && SILENT < DEVICES && DECLARES >= 1 && DEADLINE_SECONDS >= 5 && RATE > 0)) {
  throw new Error('BENCH_DEADLINE_DEVICES >= 2, a BENCH_SILENT_SHARE leaving silent and acking devices, BENCH_DEADLINE_SECONDS >= 5');
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Quantile q of sorted samples (nearest rank). */
function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
const round2 = (x: number) => Math.round(x * 100) / 100;
function percentiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: round2(quantile(sorted, 0.5)), p99: round2(quantile(sorted, 0.99)), max: round2(sorted.at(-1) ?? Number.NaN), n: sorted.length };
}

interface FeedEvent {
  offset: number;
  eventType: string;
  createdAt: string;
  data: Record<string, any>;
}

const db = benchDatabase('deadlines');
let server: ChildProcess | undefined;
const swarms: DeviceSwarm[] = [];
let report: Record<string, unknown> = {};

try {
  const port = await freePort();
  const env = benchServerEnv(db, port, { METRICS_TOKEN });
  const demo = cli(['admin', 'demo'], env) as { orgId: string; key: string; adminKey: string };
  const base = `http://127.0.0.1:${port}`;
  server = spawn(process.execPath, [BIN, 'serve'], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  process.on('exit', () => server?.kill('SIGKILL'));
  await waitForHttp(`${base}/readyz`, 60_000);
  const admin = `${base}/api/admin/v1`;
  const api = `${base}/api/public/v1/orgs/${demo.orgId}`;
  const adminHeaders = { authorization: `Bearer ${demo.adminKey}`, 'content-type': 'application/json' };
  const apiHeaders = { authorization: `Bearer ${demo.key}` };

  const fleet = (await json('POST', `${admin}/orgs/${demo.orgId}/devices`, adminHeaders, {
    devices: Array.from({ length: DEVICES }, (_, i) => ({ name: `station ${String(i).padStart(4, '0')}` })),
  })) as { items: { deviceId: string; token: string }[] };
  const silentIds = new Set(fleet.items.slice(0, SILENT).map((d) => d.deviceId));
  const wsUrl = `${base.replace('http', 'ws')}/devices/v1/stream`;
  const acking = DeviceSwarm.start(READERS, { ack: true, pong: true });
  const silent = DeviceSwarm.start(1, { pong: true });
  swarms.push(acking, silent);
  await acking.connect({ kind: 'device', wsUrl, tokens: fleet.items.slice(SILENT).map((d) => d.token) });
  await silent.connect({ kind: 'device', wsUrl, tokens: fleet.items.slice(0, SILENT).map((d) => d.token) });

  const declarer = await RawHttpConnection.open(base);
  const declareRequest = declarer.request('POST', `/api/public/v1/orgs/${demo.orgId}/emergencies`, apiHeaders, DECLARE_BODY);
  const declare = async () => {
    const answer = await declarer.send(declareRequest);
    if (answer.status !== 201) throw new Error(`declare answered ${answer.status}: ${answer.body.toString().slice(0, 200)}`);
  };
  const lastOffset = async () => ((await json('GET', `${api}/events?limit=1`, apiHeaders)) as { lastOffset: number }).lastOffset;

  for (let i = 0; i < WARM_UP; i++) await declare();
  await acking.received(await lastOffset(), 10_000);
  await sleep(SETTLE_MS);

  const setDeadline = (seconds: number | null) => json('PATCH', `${admin}/orgs/${demo.orgId}`, adminHeaders, { ackDeadlineSeconds: seconds });

  /** One phase: the declares at the offered rate, then the window until every frame they cause has reached the acking devices. */
  async function phase(withDeadline: boolean) {
    await setDeadline(withDeadline ? DEADLINE_SECONDS : null);
    const after = await lastOffset();
    await acking.collect();
    await silent.collect();
    const metricsBefore = await metrics();
    const cpuBefore = processCpuMs(server!);
    const started = monotonicMs();
    const roundTrips: number[] = [];
    for (let i = 0; i < DECLARES; i++) {
      const due = started + (i * 1000) / RATE;
      if (monotonicMs() < due) await sleep(due - monotonicMs());
      const t0 = monotonicMs();
      await declare();
      roundTrips.push(monotonicMs() - t0);
    }
    const expectedLast = after + DECLARES * (withDeadline ? 2 : 1);
    const lastDeadline = started + ((DECLARES - 1) * 1000) / RATE + DEADLINE_SECONDS * 1000;
    await acking.received(expectedLast, Math.max(0, lastDeadline + 60_000 - monotonicMs()));
    const windowEnd = Math.max(lastDeadline + 1_000, monotonicMs()) + SETTLE_MS;
    await sleep(windowEnd - monotonicMs());
    const cpuMs = processCpuMs(server!) - cpuBefore;
    const windowSeconds = (monotonicMs() - started) / 1000;
    const metricsAfter = await metrics();
    const events = await eventsAfter(after);
    const ackingArrivals = await acking.collect();
    const silentArrivals = await silent.collect();
    return { after, events, roundTrips, cpuMs, windowSeconds, metricsBefore, metricsAfter, ackingArrivals, silentArrivals };
  }

  /** The server's CPU per second over a quiet while (no declares). */
  async function idle() {
    const cpuBefore = processCpuMs(server!);
    const started = monotonicMs();
    await sleep(IDLE_SECONDS * 1000);
    return round2((processCpuMs(server!) - cpuBefore) / ((monotonicMs() - started) / 1000));
  }

  async function eventsAfter(after: number): Promise<FeedEvent[]> {
    const events: FeedEvent[] = [];
    let url = `${api}/events?after=${after}&limit=500`;
    for (;;) {
      const page = (await json('GET', url, apiHeaders)) as { items: { offset: number; event: Omit<FeedEvent, 'offset'> }[]; nextCursor: string | null };
      events.push(...page.items.map((i) => ({ offset: i.offset, ...i.event })));
      if (!page.nextCursor) return events;
      url = `${api}/events?cursor=${encodeURIComponent(page.nextCursor)}&limit=500`;
    }
  }

  async function metrics(): Promise<Map<string, number>> {
    const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    const values = new Map<string, number>();
    for (const m of text.matchAll(/^(device_event_resends_total|emergency_delivery_overdue_total)(\{[^}]*\})? (\S+)$/gm)) {
      values.set(m[1]!, (values.get(m[1]!) ?? 0) + Number(m[3]));
    }
    return values;
  }

  const without = await phase(false);
  const idleWithout = await idle();
  const withDeadline = await phase(true);
  const idleWatching = await idle();
  declarer.close();

  const wallMinusMonotonic = Date.now() - monotonicMs();
  const summary = (p: typeof without, watched: boolean) => {
    const declared = p.events.filter((e) => e.eventType === 'emergency.declared');
    const overdue = p.events.filter((e) => e.eventType === 'emergency.delivery_overdue');
    const byOffset = new Map(p.events.map((e) => [e.offset, e]));
    const faults: string[] = [];
    if (declared.length !== DECLARES) faults.push(`${declared.length} declares in the stream, expected ${DECLARES}`);
    if (overdue.length !== (watched ? DECLARES : 0)) faults.push(`${overdue.length} overdue events, expected ${watched ? DECLARES : 0}`);
    const lateCreated: number[] = [];
    const lateFirstFrame: number[] = [];
    for (const o of overdue) {
      const event = byOffset.get(o.data.eventOffset);
      if (!event) {
        faults.push(`overdue event at ${o.offset} watches offset ${o.data.eventOffset}, not in this phase`);
        continue;
      }
      const deadline = Date.parse(event.createdAt) + o.data.deadlineSeconds * 1000;
      lateCreated.push(Date.parse(o.createdAt) - deadline);
      const arrived = p.ackingArrivals.get(o.offset)?.arrived;
      if (arrived?.length) lateFirstFrame.push(Math.min(...arrived) + wallMinusMonotonic - deadline);
      const named = (o.data.silentDevices as { deviceId: string }[]).map((d) => d.deviceId);
      if (o.data.targeted !== DEVICES || o.data.acknowledged !== DEVICES - SILENT || o.data.silentDevicesTotal !== SILENT) {
        faults.push(`overdue event at ${o.offset}: targeted ${o.data.targeted}, acknowledged ${o.data.acknowledged}, silent ${o.data.silentDevicesTotal}`);
      } else if (named.some((id) => !silentIds.has(id))) faults.push(`overdue event at ${o.offset} names an acknowledging device`);
    }
    // Every event frame of the phase at every device once, and the declares a second time at the silent devices with a deadline.
    const frames = (arrivals: Map<number, Arrivals>, offsets: number[]) => offsets.reduce((n, offset) => n + (arrivals.get(offset)?.arrived.length ?? 0), 0);
    const declaredOffsets = declared.map((e) => e.offset);
    const silentFrames = frames(p.silentArrivals, declaredOffsets);
    const ackingFrames = frames(p.ackingArrivals, declaredOffsets);
    if (ackingFrames !== declared.length * (DEVICES - SILENT))
      faults.push(`${ackingFrames} declare frames at the acking devices, expected ${declared.length * (DEVICES - SILENT)}`);
    const resentFrames = silentFrames - declared.length * SILENT;
    if (resentFrames !== (watched ? declared.length * SILENT : 0))
      faults.push(`${resentFrames} frames re-sent to the silent devices, expected ${watched ? declared.length * SILENT : 0}`);
    const counter = (name: string) => (p.metricsAfter.get(name) ?? 0) - (p.metricsBefore.get(name) ?? 0);
    // About the size of each kind's frame: its envelope as the feed gives it.
    const envelopeBytes = (e: FeedEvent | undefined) => (e ? Buffer.byteLength(JSON.stringify({ ...e, offset: undefined })) : null);
    return {
      declares: declared.length,
      declareMs: percentiles(p.roundTrips),
      serverCpuMs: round2(p.cpuMs),
      serverCpuMsPerDeclare: round2(p.cpuMs / DECLARES),
      windowSeconds: round2(p.windowSeconds),
      overdueEvents: overdue.length,
      overdueLatenessMs: watched ? { createdAt: percentiles(lateCreated), firstFrame: percentiles(lateFirstFrame) } : undefined,
      resentFrames,
      envelopeBytes: { declared: envelopeBytes(declared[0]), overdue: envelopeBytes(overdue[0]) },
      resendsCounted: counter('device_event_resends_total'),
      overdueCounted: counter('emergency_delivery_overdue_total'),
      faults,
    };
  };
  const a = summary(without, false);
  const b = summary(withDeadline, true);
  report = {
    database: db.dialect,
    devices: DEVICES,
    silentDevices: SILENT,
    declares: DECLARES,
    declaresPerSecond: RATE,
    deadlineSeconds: DEADLINE_SECONDS,
    withoutDeadline: a,
    withDeadline: b,
    cpuPerDeclareRatio: round2(b.serverCpuMsPerDeclare / a.serverCpuMsPerDeclare),
    declareP50Ratio: round2(b.declareMs.p50 / a.declareMs.p50),
    declareP99Ratio: round2(b.declareMs.p99 / a.declareMs.p99),
    idleCpuMsPerSecond: { withoutDeadlines: idleWithout, watchingOverdue: idleWatching, idleSeconds: IDLE_SECONDS },
  };
  console.log(`database: ${db.dialect}; ${DEVICES} devices (${SILENT} silent), ${DECLARES} declares at ${RATE}/s per phase, deadline ${DEADLINE_SECONDS} s`);
  for (const [label, s] of [
    ['without deadline', a],
    ['with deadline', b],
  ] as const) {
    console.log(
      `  ${label.padEnd(17)} server CPU ${s.serverCpuMsPerDeclare} ms/declare (${s.serverCpuMs} ms in ${s.windowSeconds} s); declare p50 ${s.declareMs.p50} ms, p99 ${s.declareMs.p99} ms; ${s.overdueEvents} overdue, ${s.resentFrames} frames re-sent`,
    );
    if (s.overdueLatenessMs) {
      const l = s.overdueLatenessMs;
      console.log(
        `  overdue lateness: createdAt − deadline p50 ${l.createdAt.p50} ms, p99 ${l.createdAt.p99} ms; first frame − deadline p50 ${l.firstFrame.p50} ms, p99 ${l.firstFrame.p99} ms`,
      );
    }
    for (const f of s.faults) console.log(`  FAULT (${label}): ${f}`);
  }
  console.log(`  with / without: CPU per declare ${report.cpuPerDeclareRatio}×, declare p50 ${report.declareP50Ratio}×, p99 ${report.declareP99Ratio}×`);
  console.log(`  idle server CPU: ${idleWithout} ms/s without deadlines, ${idleWatching} ms/s watching ${b.overdueEvents} incomplete overdue deliveries`);
} finally {
  for (const swarm of swarms) await swarm.close();
  if (server) await stopProcess(server);
  await db.drop();
}
writeBenchJson(report);

async function json(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<unknown> {
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${(await res.text()).slice(0, 300)}`);
  return res.json();
}
