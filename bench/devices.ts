/**
 * Device gateway benchmark.
 *   1. declare→frame latency with 100 and with 1,000 connected devices of one org (p50/p99/max over every
 *      delivery, and the time until the last device of the org has the frame), against baselines measured in
 *      the same run: the declare round trip alone and declare→frame with a single device; bare TCP fan-out
 *      floors (node:net, C with 1 and 2 threads); a bare HTTP POST + commit + node:net fan-out server
 *      (bench/baselines/commit-fan-out.ts: the design without the product's work); and the peers, the same number of subscribers reading the
 *      same number of messages of the frame's size, one at a time, through
 *        - Mosquitto (MQTT 3.1.1, QoS 0; published with the `mqtt` client),
 *        - NATS core (published with the `nats` client, @nats-io/transport-node),
 *        - NATS JetStream: a stream on file storage (the peer that also stores and replays, as the service
 *          commits every event) and per subscriber an ordered push consumer as nats.js makes them (ack none,
 *          deliver new, flow control, idle heartbeat) delivering to its own inbox; the publish waits for the
 *          stream's PubAck, as a declare waits for its commit.
 *      All of them are read by the same reader processes (bench/lib/device-reader.c): sent → frame arrived. At each
 *      count everything is connected first and then measured in interleaved rounds (every system in turn, in an order
 *      shuffled anew every round, sends one message and waits for all of its subscribers), so that the other work on
 *      the machine, which comes and goes, weighs on all of them alike.
 *   2. Server RSS with 10,000 idle connected devices → devices per GiB.
 * The server runs in a child process (`emergency-api serve`) so the clients' memory and CPU are not
 * counted as the server's; provisioning runs here. The measuring devices read frames off the wire in
 * BENCH_READERS processes (default 2, one per core here; see bench/lib/device-swarm.ts), and the bare
 * TCP floor is read the same way.
 *
 *   node --import tsx bench/devices.ts            (SQLite file in a temp dir)
 *   DATABASE_URL=postgres://... node --import tsx bench/devices.ts
 *   BENCH_PARTS=latency|idle, BENCH_IDLE_DEVICES, BENCH_DECLARES to run less
 *   BENCH_LATENCY_DEVICES=100,1000 (default): the subscriber counts of the latency part, comma-separated
 *   BENCH_PEERS=mosquitto,nats,jetstream (default; empty for none): the peers measured at each count; a peer
 *     whose server does not answer is skipped with a note
 *   BENCH_MQTT_PORT (1883), BENCH_NATS_PORT (4222): the local Mosquitto and NATS (started with -js) servers
 *   BENCH_JETSTREAM_STORAGE=file (default) or memory: the JetStream stream's storage
 *   BENCH_BASELINE_SERVER_BIN=path: also measures, at each count, a second server child on its own database running
 *     this entry point (bin/emergency-api.js of another checkout, built: e.g. the tree before a gateway change):
 *     the change's before/after in the same run
 *   BENCH_BASELINE_SERVER_NODE_ARGS="flags": a second server child (the same entry point unless
 *     BENCH_BASELINE_SERVER_BIN is set) with these node flags instead of BENCH_SERVER_NODE_ARGS: a V8 flag's
 *     before/after in one run
 *   BENCH_DEVICE_ACK=1: the measuring devices acknowledge every event frame they read ({"type":"ack","offset":N}),
 *     so the gateway's ack recording (batched flushes every second) runs during the latency measurement; the run
 *     then checks that every device's acknowledged offset reached the last event
 *   BENCH_SERVER_NODE_ARGS: extra node flags for the server child, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to
 *     profile the gateway under the benchmark, or "--trace-opt --trace-deopt" to see what V8 optimizes (with flags,
 *     the server's stdout is shown)
 *   BENCH_GATEWAY_PRELOAD=N: N declares on another org of the server (no devices) before the gateway's rounds at each
 *     count, so its declare path runs optimized code as on a server that has been taking traffic (see `preload`)
 *   BENCH_PHASES=1: the gateway's server child also records, per declare, when Node parsed the request, when
 *     Fastify called the handler, when the event committed and when its frame was on every socket (diagnostics
 *     channels, bench/lib/phase-trace.mjs); the run splits declare → frame at those moments
 *   BENCH_SINGLE_PAUSE_MS (default 5): the pause after each declare of the 1-device baseline (0: the next declare
 *     follows at once, so the server never idles between them)
 *   BENCH_JSON=path writes the results as JSON (read by bench/run-all.ts)
 * Targets: p99 < 5 ms; >= 20,000 idle devices per GiB.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import mqtt from 'mqtt';
import WebSocket from 'ws';
import { createContext } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { AppContext } from '../src/context.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { operatorCaller } from '../src/domain/access/principal.js';
import { eventsAfter } from '../src/log/reads.js';
import { createDevice } from '../src/domain/devices/service.js';
import { createApiKey } from '../src/domain/keys/service.js';
import { createEnterprise, createOrg, createPartner } from '../src/domain/orgs/service.js';
import { compiledTool } from './lib/c-tools.js';
import { processCpuMs, ROOT, startProcess, stopProcess } from './lib/harness.js';
import { RawHttpConnection } from './lib/raw-http.js';
import { type Arrivals, DeviceSwarm, monotonicMs } from './lib/device-swarm.js';
import { raiseDescriptorLimit, roundOrder } from './lib/rounds.js';

const LATENCY_SIZES = (process.env.BENCH_LATENCY_DEVICES ?? '100,1000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const LATENCY_DEVICES = Math.max(...LATENCY_SIZES);
const PEERS = (process.env.BENCH_PEERS ?? 'mosquitto,nats,jetstream').split(',').filter(Boolean) as PeerName[];
const MQTT_PORT = Number(process.env.BENCH_MQTT_PORT ?? 1883);
const NATS_PORT = Number(process.env.BENCH_NATS_PORT ?? 4222);
const BASELINE_SERVER_BIN = process.env.BENCH_BASELINE_SERVER_BIN ?? '';
/** Node flags of that second server child instead of BENCH_SERVER_NODE_ARGS (unset: the same). */
const BASELINE_SERVER_NODE_ARGS = process.env.BENCH_BASELINE_SERVER_NODE_ARGS;
/** How the second server child differs from the first. */
const BASELINE_LABEL = [
  BASELINE_SERVER_BIN ? `server ${BASELINE_SERVER_BIN}` : '',
  BASELINE_SERVER_NODE_ARGS !== undefined ? `node flags "${BASELINE_SERVER_NODE_ARGS}"` : '',
]
  .filter(Boolean)
  .join(', ');
const JETSTREAM_STORAGE = process.env.BENCH_JETSTREAM_STORAGE === 'memory' ? 'memory' : 'file';
const IDLE_DEVICES = Number(process.env.BENCH_IDLE_DEVICES ?? 10_000);
const DECLARES = Number(process.env.BENCH_DECLARES ?? 200);
/** Declares on another org before the gateway's rounds at each count (see `preload`); 0 (default): none. */
const PRELOAD = Number(process.env.BENCH_GATEWAY_PRELOAD ?? 0);
/** Pause after each declare of the 1-device baseline run, so the server idles between declares as between rounds. */
const SINGLE_PAUSE_MS = Number(process.env.BENCH_SINGLE_PAUSE_MS ?? 5);
/** Records the phases of each declare inside the gateway's server child (see bench/lib/phase-trace.mjs). */
const PHASES = process.env.BENCH_PHASES === '1';
const PHASE_TRACE = fileURLToPath(new URL('./lib/phase-trace.mjs', import.meta.url));
/** Processes the measuring devices are spread over (see bench/lib/device-swarm.ts). */
const READERS = Number(process.env.BENCH_READERS ?? 2);
/** About the size of an emergency.declared frame as the benchmark declares it; measured in the run (`frameSize`). */
const ESTIMATED_FRAME_BYTES = 900;
/** The measuring devices acknowledge every event frame (see bench/lib/device-reader.c). */
const ACK = process.env.BENCH_DEVICE_ACK === '1';
/** `latency`, `idle` or both (default). */
const PARTS = (process.env.BENCH_PARTS ?? 'latency,idle').split(',');
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
const BIN = fileURLToPath(new URL('../bin/emergency-api.js', import.meta.url));

// 10,000 client sockets here (and as many in the server child) need a raised descriptor limit.
raiseDescriptorLimit((PARTS.includes('idle') ? IDLE_DEVICES : LATENCY_DEVICES) + 1_000);

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const fmt = (ms: number) => `${ms.toFixed(2)} ms`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** p50 and p99 of the samples, in ms. */
function percentiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted.at(-1)! };
}

function summarize(label: string, samples: number[]) {
  const { p50, p99, max } = percentiles(samples);
  console.log(`  ${label.padEnd(46)} p50 ${fmt(p50).padStart(10)}  p99 ${fmt(p99).padStart(10)}  max ${fmt(max).padStart(10)}  (n=${samples.length})`);
  return { p50, p99, max };
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

interface ServerChild {
  child: ChildProcess;
  url: string;
  rssBytes(): number;
  stop(): Promise<void>;
}

interface ServerChildOptions {
  /** Settings of the service beyond the benchmark's own. */
  env?: Record<string, string>;
  /** The entry point (another checkout's, for a before/after); default this tree's. */
  bin?: string;
  /** Node flags; default BENCH_SERVER_NODE_ARGS. */
  nodeArgs?: string[];
  /** Loads bench/lib/phase-trace.mjs, which writes its records to this file (BENCH_PHASES). */
  phaseTraceFile?: string;
}

async function startServerChild(
  databaseUrl: string,
  { env: extraEnv = {}, bin = BIN, nodeArgs = SERVER_NODE_ARGS, phaseTraceFile }: ServerChildOptions = {},
): Promise<ServerChild> {
  const port = await freePort();
  const traceArgs = phaseTraceFile ? ['--import', PHASE_TRACE] : [];
  const traceEnv: Record<string, string> = phaseTraceFile ? { PHASE_TRACE_FILE: phaseTraceFile } : {};
  const child = spawn(process.execPath, [...nodeArgs, ...traceArgs, bin, 'serve'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_KEY: '1000000',
      METRICS_TOKEN: BENCH_METRICS_TOKEN,
      ...traceEnv,
      ...extraEnv,
    },
    // With node flags of its own (a trace such as --trace-opt prints on stdout), the server's stdout is shown too.
    stdio: ['ignore', nodeArgs.length > 0 ? 'inherit' : 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (i > 300) throw new Error('server child did not start');
    await sleep(100);
  }
  return {
    child,
    url,
    rssBytes: () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) * 1024,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** /metrics is served to this token only (a baseline build that predates the token ignores it). */
const BENCH_METRICS_TOKEN = 'bench-metrics-token-0123456789';

/** Cumulative bucket counts of the server's device_event_latency_seconds histogram (commit → written to every socket). */
async function serverFanOutBuckets(base: string): Promise<Map<number, number>> {
  const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` } })).text();
  const buckets = new Map<number, number>();
  for (const m of text.matchAll(/^device_event_latency_seconds_bucket\{le="([^"]+)"\} (\d+)/gm)) {
    buckets.set(m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2]));
  }
  return buckets;
}

/** The smallest bucket bound holding quantile q of the events between two scrapes, in ms. */
function bucketQuantileMs(before: Map<number, number>, after: Map<number, number>, q: number): number {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const total = (after.get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
  for (const le of bounds) if ((after.get(le) ?? 0) - (before.get(le) ?? 0) >= q * total) return le * 1000;
  return Infinity;
}

async function provision(ctx: AppContext, devices: number) {
  const partnerId = (await createPartner(ctx, operatorCaller(), { name: 'Bench partner' })).partnerId;
  const enterpriseId = (await createEnterprise(ctx, operatorCaller(), partnerId, { name: 'Bench enterprise' })).enterpriseId;
  const orgId = (await createOrg(ctx, operatorCaller(), enterpriseId, { name: 'Bench org' })).orgId;
  const { key } = await createApiKey(ctx, operatorCaller(), { name: 'bench', subjectType: 'org', subjectId: orgId, permissions: ['read', 'write'] });
  const tokens: string[] = [];
  for (let i = 0; i < devices; i++) tokens.push((await createDevice(ctx, operatorCaller(), orgId, { name: `station ${i}` })).token);
  return { orgId, key, tokens };
}

/** A bare fan-out server for the floor runs: `trigger()` makes it write one buffer to every accepted socket. */
interface FloorServer {
  port: number;
  accept(count: number): Promise<void>;
  trigger(): void;
  stop(): void;
}

// The floor under a Node gateway: a bare node:net server in a child process writes one buffer of a frame's
// size to each socket from its event loop (no WebSocket, no database).
const NODE_FAN_OUT_SERVER = `
const net = require('node:net');
const sockets = [];
const server = net.createServer((s) => { s.setNoDelay(true); sockets.push(s); });
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (m) => {
  if (m.bytes) { const buf = Buffer.alloc(m.bytes, 120); for (const s of sockets) s.write(buf); }
  if (m.stop) process.exit(0);
});
`;

async function nodeFloorServer(bytes: number): Promise<FloorServer> {
  const child = spawn(process.execPath, ['-e', NODE_FAN_OUT_SERVER], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const { port } = await new Promise<{ port: number }>((resolve) => child.once('message', (m) => resolve(m as { port: number })));
  return { port, accept: async () => {}, trigger: () => child.send({ bytes }), stop: () => child.send({ stop: true }) };
}

// The floor under any gateway, in any language: bench/lib/fan-out-floor.c writes the buffer to every socket
// in a tight loop of write(2) calls from `threads` threads, and does nothing else.
async function cFloorServer(threads: number, bytes: number): Promise<FloorServer> {
  const child = spawn(compiledTool('fan-out-floor.c'), [String(threads), String(bytes)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async () => String((await lines.next()).value);
  const port = Number((await next()).split(' ')[1]);
  return {
    port,
    accept: async (count) => {
      child.stdin!.write(`accept ${count}\n`);
      if ((await next()) !== 'accepted') throw new Error('fan-out-floor did not accept');
    },
    // Its "written" answers are not awaited: the readers time the arrivals.
    trigger: () => child.stdin!.write('write\n'),
    stop: () => child.kill(),
  };
}

/** Per delivery, from the trigger until the frame reached the device's socket (`arrived`) and until it was read. */
interface Deliveries {
  arrived: number[];
  read: number[];
  /** Per trigger: the first and the last device's arrival. */
  first: number[];
  last: number[];
  /** Triggers that did not reach every device. */
  missing: number;
  /** Per trigger (offset): when it was sent, and when its first and last device had it (monotonic ms). */
  sentAt: Map<number, number>;
  firstAt: Map<number, number>;
  lastAt: Map<number, number>;
}

function deliveriesSince(sentAt: Map<number, number>, arrivals: Map<number, Arrivals>, devices: number): Deliveries {
  const result: Deliveries = { arrived: [], read: [], first: [], last: [], missing: 0, sentAt, firstAt: new Map(), lastAt: new Map() };
  for (const [offset, t0] of sentAt) {
    const entry = arrivals.get(offset);
    if (entry?.arrived.length !== devices) result.missing++;
    if (!entry || entry.arrived.length === 0) continue;
    for (const at of entry.arrived) result.arrived.push(at - t0);
    for (const at of entry.read) result.read.push(at - t0);
    const first = Math.min(...entry.arrived);
    const last = Math.max(...entry.arrived);
    result.first.push(first - t0);
    result.last.push(last - t0);
    result.firstAt.set(offset, first);
    result.lastAt.set(offset, last);
  }
  return result;
}

/**
 * BENCH_PHASES: the path of each measured declare of `orgId`, split at the moments the server child recorded
 * (bench/lib/phase-trace.mjs) and the devices' arrivals, all on CLOCK_MONOTONIC. The child writes its records
 * on SIGUSR2, after the rounds.
 */
async function declarePhases(server: ServerChild, file: string, orgId: string, run: Deliveries, devices: number) {
  server.child.kill('SIGUSR2');
  await sleep(300);
  const inServer = new Map<number, { received: number; handler: number; committed: number; written: number; sockets: number }>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [org, offset, received, handler, committed, written, sockets] = line.split(' ');
    if (org === orgId)
      inServer.set(Number(offset), { received: +received!, handler: +handler!, committed: +committed!, written: +written!, sockets: +sockets! });
  }
  const steps: Record<string, number[]> = { received: [], pipeline: [], commit: [], firstFrame: [], fanOut: [], lastFrame: [] };
  for (const [offset, sent] of run.sentAt) {
    const s = inServer.get(offset);
    const first = run.firstAt.get(offset);
    const last = run.lastAt.get(offset);
    if (!s || first === undefined || last === undefined || s.sockets !== devices) continue;
    steps.received!.push(s.received - sent);
    steps.pipeline!.push(s.handler - s.received);
    steps.commit!.push(s.committed - s.handler);
    steps.firstFrame!.push(first - s.committed);
    steps.fanOut!.push(s.written - s.committed);
    steps.lastFrame!.push(last - s.committed);
  }
  console.log(`\n  inside the server, per declare (BENCH_PHASES: diagnostics channels; ${steps.received!.length} of ${run.sentAt.size} declares traced)`);
  const result = {
    traced: steps.received!.length,
    receivedMs: summarize('sent → request head parsed by Node', steps.received!),
    pipelineMs: summarize('  → handler called (key, body, validation)', steps.pipeline!),
    commitMs: summarize('  → event committed (service, transaction)', steps.commit!),
    firstFrameMs: summarize('  → first device has the frame', steps.firstFrame!),
    fanOutMs: summarize(`committed → written to all ${devices} sockets`, steps.fanOut!),
    lastFrameMs: summarize(`committed → last device has the frame`, steps.lastFrame!),
  };
  return result;
}

/** Opens `tokens.length` idle `ws` device clients, `parallel` handshakes at a time. Returns their closers. */
async function connectIdle(wsUrl: string, tokens: string[], parallel = 200): Promise<(() => void)[]> {
  const closers: (() => void)[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < tokens.length) {
        const token = tokens[next++]!;
        const ws = await new Promise<WebSocket>((resolve, reject) => {
          const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false });
          ws.once('open', () => resolve(ws));
          ws.once('error', reject);
        });
        closers.push(() => ws.terminate());
      }
    }),
  );
  return closers;
}

const DECLARE_BODY = JSON.stringify({ description: 'bench', location: { floorId: '3' } });

/**
 * Declares on one kept-alive connection with the request's bytes prepared beforehand (see RawHttpConnection):
 * a declare counts as sent when its bytes go to the kernel, as a peer's publish does, so the times are the
 * service's. (node:http's client, used before, added its own tail: the every-delivery p99 at 100 devices was
 * 4.3-6.2 ms with it against 3.1-4.6 ms with this in the same four runs, the p50 alike.)
 */
async function openDeclarer(base: string, orgId: string, key: string): Promise<{ declare(): Promise<number>; close(): void }> {
  const connection = await RawHttpConnection.open(base);
  const request = connection.request('POST', `/api/public/v1/orgs/${orgId}/emergencies`, { authorization: `Bearer ${key}` }, DECLARE_BODY);
  return {
    /** Resolves with the time the answer was complete. */
    async declare() {
      const answer = await connection.send(request);
      if (answer.status !== 201) throw new Error(`declare failed: ${answer.status}`);
      return monotonicMs();
    },
    close: () => connection.close(),
  };
}

async function latencyRun(server: ServerChild, ctx: AppContext, devices: number, declares: number) {
  const { orgId, key, tokens } = await provision(ctx, devices);
  const swarm = DeviceSwarm.start(Math.min(READERS, devices), { ack: ACK });
  await swarm.connect({ kind: 'device', wsUrl: `${server.url.replace('http', 'ws')}/devices/v1/stream`, tokens });
  await sleep(500);
  const roundTrips: number[] = [];
  const declarer = await openDeclarer(server.url, orgId, key);
  // Warm-up so JIT and connection pools are hot.
  for (let i = 0; i < 20; i++) await declarer.declare();
  const base = Number((await ctx.db.db.selectFrom('orgs').select('event_offset').where('id', '=', orgId).executeTakeFirstOrThrow()).event_offset);
  await sleep(300);
  await swarm.collect();
  // The server's CPU time from the first measured declare until its frames (and, with acks, the acks of them)
  // are written: steadier than latencies when other work shares the machine.
  const cpuBefore = processCpuMs(server.child);
  const sentAt = new Map<number, number>();
  for (let i = 1; i <= declares; i++) {
    const t0 = monotonicMs();
    sentAt.set(base + i, t0);
    const t1 = await declarer.declare();
    roundTrips.push(t1 - t0);
    // Wait for the fan-out to finish so declares do not overlap.
    await swarm.received(base + i, 2_000);
    if (SINGLE_PAUSE_MS > 0) await sleep(SINGLE_PAUSE_MS);
  }
  const deliveries = deliveriesSince(sentAt, await swarm.collect(), devices);
  // With acks: once the gateway has flushed them (every second), every device must stand at the last event
  // (given 15 s: one flush of a thousand acks on a busy PostgreSQL can take seconds).
  const acked = ACK ? await ackedDevices(ctx, orgId, base + declares, devices) : undefined;
  const serverCpuMsPerDeclare = Number(((processCpuMs(server.child) - cpuBefore) / declares).toFixed(3));
  declarer.close();
  await swarm.close();
  return { orgId, base, roundTrips, ...deliveries, acked, serverCpuMsPerDeclare };
}

/**
 * With acks: once the gateway has flushed them (every second), every device must stand at the last event
 * (given 15 s: one flush of a thousand acks on a busy PostgreSQL can take seconds). Returns how many do.
 */
async function ackedDevices(ctx: AppContext, orgId: string, last: number, devices: number): Promise<number> {
  let acked = 0;
  for (let i = 0; i < 150; i++) {
    const row = await ctx.db.db
      .selectFrom('devices')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('org_id', '=', orgId)
      .where('acked_offset', '>=', last)
      .executeTakeFirstOrThrow();
    acked = Number(row.n);
    if (acked === devices) break;
    await sleep(100);
  }
  return acked;
}

/** The emergency.declared frame the gateway sent for the last declare: its JSON payload and its bytes on the wire. */
async function frameSize(ctx: AppContext, orgId: string, offset: number): Promise<{ payloadBytes: number; wireBytes: number }> {
  const [row] = await eventsAfter(ctx.db, orgId, offset - 1, 1);
  if (!row) return { payloadBytes: ESTIMATED_FRAME_BYTES - 4, wireBytes: ESTIMATED_FRAME_BYTES };
  const payloadBytes = Buffer.byteLength(`{"type":"event","offset":${row.offset},"event":${row.payload}}`);
  return { payloadBytes, wireBytes: payloadBytes + (payloadBytes < 126 ? 2 : payloadBytes < 65_536 ? 4 : 10) };
}

// The peers: brokers that fan one published message out to every subscriber.
type PeerName = 'mosquitto' | 'nats' | 'jetstream';

const PEER_LABELS: Record<PeerName, string> = {
  mosquitto: 'Mosquitto, MQTT QoS 0',
  nats: 'NATS core',
  jetstream: `NATS JetStream (${JETSTREAM_STORAGE} storage), ordered push consumers`,
};

/** A message of the frame's payload size that the readers number like an event frame. */
function peerPayload(round: number, bytes: number): Buffer {
  const head = `{"type":"event","offset":${round},"event":{"pad":"`;
  const tail = '"}}';
  return Buffer.from(head + 'x'.repeat(Math.max(0, bytes - head.length - tail.length)) + tail);
}

interface PeerRun {
  /** Subscribes `count` reader sockets; then `publish` sends one message and resolves when the publisher is done with it. */
  subscribe(swarm: DeviceSwarm, count: number): Promise<void>;
  publish(payload: Buffer): Promise<void> | void;
  stop(): Promise<void>;
}

async function startPeer(name: PeerName, tag: string): Promise<PeerRun> {
  if (name === 'mosquitto') {
    const topic = `bench/devices/${tag}`;
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${MQTT_PORT}`, { protocolVersion: 4, clean: true, reconnectPeriod: 0, connectTimeout: 3_000 });
    // mqtt.js leaves Nagle's algorithm on; the other publishers (the declarer, nats) turn it off.
    (client.stream as unknown as { setNoDelay?(on: boolean): void }).setNoDelay?.(true);
    return {
      subscribe: (swarm, count) => swarm.connect({ kind: 'mqtt', port: MQTT_PORT, count, topic }),
      publish: (payload) => void client.publish(topic, payload, { qos: 0 }),
      stop: () => client.endAsync(),
    };
  }
  const nc = await natsConnect({ servers: `127.0.0.1:${NATS_PORT}`, timeout: 3_000, maxReconnectAttempts: 0 });
  // One subject per peer: NATS core and JetStream share the server and are measured side by side.
  const subject = `bench.devices.${name}.${tag}`;
  if (name === 'nats') {
    return {
      subscribe: (swarm, count) => swarm.connect({ kind: 'nats', port: NATS_PORT, subjects: Array.from({ length: count }, () => subject) }),
      publish: (payload) => nc.publish(subject, payload),
      stop: () => nc.close(),
    };
  }
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = `BENCH_DEVICES_${tag.replaceAll('.', '_')}`;
  await jsm.streams.add({ name: stream, subjects: [subject], storage: JETSTREAM_STORAGE, num_replicas: 1 });
  return {
    async subscribe(swarm, count) {
      const inboxes = Array.from({ length: count }, (_, i) => `_INBOX.bench.${tag}.${i}`);
      // The readers subscribe first, then every one gets its consumer: the configuration of a nats.js
      // ordered push consumer (jsm.streams ... ordered), starting at the next message.
      await swarm.connect({ kind: 'nats', port: NATS_PORT, subjects: inboxes });
      for (let i = 0; i < count; i += 50) {
        await Promise.all(
          inboxes.slice(i, i + 50).map((inbox, j) =>
            jsm.consumers.add(stream, {
              name: `oc_${tag.replaceAll('.', '_')}_${i + j}`,
              deliver_subject: inbox,
              deliver_policy: 'new',
              ack_policy: 'none',
              max_deliver: 1,
              flow_control: true,
              idle_heartbeat: 30_000 * 1e6,
              inactive_threshold: 5 * 60_000 * 1e6,
              num_replicas: 1,
              mem_storage: true,
              filter_subject: subject,
            } as Parameters<typeof jsm.consumers.add>[1]),
          ),
        );
      }
    },
    publish: async (payload) => {
      await js.publish(subject, payload);
    },
    stop: async () => {
      await jsm.streams.delete(stream);
      await nc.close();
    },
  };
}

/**
 * One of the systems measured at a subscriber count: the gateway (and its same-run variant), a bare TCP floor,
 * or a peer broker. `send(round)` makes it push message `round` to all of its subscribers (a declare, a
 * trigger, a publish) and resolves when the sender is done with it (the declare's answer, the PubAck);
 * `swarm` reads its subscribers.
 */
interface Contender {
  name: string;
  label: string;
  count: number;
  swarm: DeviceSwarm;
  send(round: number): Promise<void>;
  /** The number the readers see for `round` (the gateway's stream offset; the round itself elsewhere). */
  offsetOf(round: number): number;
  /** How long each send took until its sender was done (declare round trip, publish → PubAck). */
  sendTimes: number[];
  close(): Promise<void>;
}

async function gatewayContender(name: string, label: string, server: ServerChild, ctx: AppContext, devices: number): Promise<Contender & { orgId: string }> {
  const { orgId, key, tokens } = await provision(ctx, devices);
  const swarm = DeviceSwarm.start(Math.min(READERS, devices), { ack: ACK });
  await swarm.connect({ kind: 'device', wsUrl: `${server.url.replace('http', 'ws')}/devices/v1/stream`, tokens });
  let base = 0;
  const sendTimes: number[] = [];
  const declarer = await openDeclarer(server.url, orgId, key);
  if (PRELOAD > 0) await preload(server, ctx);
  return {
    name,
    label,
    orgId,
    count: devices,
    swarm,
    sendTimes,
    async send(round) {
      const t0 = monotonicMs();
      const t1 = await declarer.declare();
      if (round > 0) sendTimes.push(t1 - t0);
      // After the warm-up (round 0), the measured rounds count from the org's offset then.
      else base = Number((await ctx.db.db.selectFrom('orgs').select('event_offset').where('id', '=', orgId).executeTakeFirstOrThrow()).event_offset);
    },
    offsetOf: (round) => base + round,
    close: async () => {
      declarer.close();
      await swarm.close();
    },
  };
}

/**
 * BENCH_GATEWAY_PRELOAD declares, back to back, on another org of the server (one without devices): the declare
 * path then runs code V8 has optimized, as on a server that has been taking traffic. After the 20 warm-up rounds
 * alone it still runs most of it in the interpreter and baseline tiers (V8 optimizes a function after some hundreds
 * of calls, and some hundreds more after its inline caches last changed).
 */
async function preload(server: ServerChild, ctx: AppContext): Promise<void> {
  const other = await provision(ctx, 0);
  const declarer = await openDeclarer(server.url, other.orgId, other.key);
  for (let i = 0; i < PRELOAD; i++) await declarer.declare();
  declarer.close();
  await sleep(1000);
}

/**
 * The round numbers of a plain socket: the readers number its rounds by the bytes read, so the warm-up sends
 * count too. `sent(round)` records a send; `offsetOf(round)` is the number the readers see for it.
 */
function byteNumberedRounds() {
  let sent = 0;
  let warmUp = 0;
  return {
    sent(round: number) {
      sent++;
      if (round === 0) warmUp = sent;
    },
    offsetOf: (round: number) => (round === 0 ? sent : warmUp + round),
  };
}

async function floorContender(name: string, label: string, server: FloorServer, devices: number, bytes: number): Promise<Contender> {
  const swarm = DeviceSwarm.start(Math.min(READERS, devices));
  await Promise.all([server.accept(devices), swarm.connect({ kind: 'tcp', port: server.port, count: devices, bytes })]);
  const rounds = byteNumberedRounds();
  return {
    name,
    label,
    count: devices,
    swarm,
    sendTimes: [],
    async send(round) {
      rounds.sent(round);
      server.trigger();
    },
    offsetOf: rounds.offsetOf,
    async close() {
      await swarm.close();
      server.stop();
    },
  };
}

/**
 * The same-run reference of the design (bench/baselines/commit-fan-out.ts): a bare server in its own process that, per
 * HTTP POST, commits two inserts on the same kind of database and writes a buffer of the frame's size to each of its
 * device sockets from its event loop, then answers. It is sent to and read exactly as the gateway is (a declare on a
 * kept-alive connection; the readers time the arrivals), so the gap between the two is the product's own work (key,
 * validation, the event, audit and offset rows, the stream), and the gap between it and a peer is what an HTTP
 * request and a commit cost before the first write.
 */
async function bareGatewayContender(devices: number, bytes: number, databaseFile: string): Promise<Contender> {
  const port = await freePort();
  const pgUrl = process.env.DATABASE_URL && /^postgres/.test(process.env.DATABASE_URL) ? process.env.DATABASE_URL : undefined;
  const child = await startProcess(
    ['--import', 'tsx', join(ROOT, 'bench/baselines/commit-fan-out.ts')],
    {
      PORT: String(port),
      BASELINE_FRAME_BYTES: String(bytes),
      ...(pgUrl ? { BASELINE_PG_URL: pgUrl } : { BASELINE_DB: databaseFile }),
    },
    `http://127.0.0.1:${port}/health`,
  );
  const health = async () => (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { devices: number; devicePort: number };
  const swarm = DeviceSwarm.start(Math.min(READERS, devices));
  await swarm.connect({ kind: 'tcp', port: (await health()).devicePort, count: devices, bytes });
  for (let i = 0; ; i++) {
    const { devices: connected } = await health();
    if (connected === devices) break;
    if (i > 100) throw new Error(`bare gateway: ${connected} of ${devices} device sockets accepted`);
    await sleep(50);
  }
  const connection = await RawHttpConnection.open(`http://127.0.0.1:${port}`);
  const request = connection.request('POST', '/declare', {}, DECLARE_BODY);
  const sendTimes: number[] = [];
  const rounds = byteNumberedRounds();
  return {
    name: 'bare',
    label: BARE_GATEWAY_LABEL,
    count: devices,
    swarm,
    sendTimes,
    async send(round) {
      rounds.sent(round);
      const t0 = monotonicMs();
      const answer = await connection.send(request);
      if (answer.status !== 201) throw new Error(`bare gateway answered ${answer.status}`);
      if (round > 0) sendTimes.push(monotonicMs() - t0);
    },
    offsetOf: rounds.offsetOf,
    async close() {
      connection.close();
      await swarm.close();
      await stopProcess(child);
    },
  };
}

const BARE_GATEWAY_LABEL = 'bare HTTP POST + commit + node:net fan-out';

async function peerContender(name: PeerName, subscribers: number, bytes: number): Promise<Contender> {
  const peer = await startPeer(name, `${process.pid}.${subscribers}`);
  const swarm = DeviceSwarm.start(Math.min(READERS, subscribers));
  try {
    await peer.subscribe(swarm, subscribers);
  } catch (err) {
    await swarm.close();
    await peer.stop();
    throw err;
  }
  const sendTimes: number[] = [];
  return {
    name,
    label: PEER_LABELS[name],
    count: subscribers,
    swarm,
    sendTimes,
    async send(round) {
      const t0 = monotonicMs();
      await peer.publish(peerPayload(round, bytes));
      if (round > 0) sendTimes.push(monotonicMs() - t0);
    },
    offsetOf: (round) => round,
    async close() {
      await swarm.close();
      await peer.stop();
    },
  };
}

/**
 * Measures the contenders together: in each of `rounds` rounds every contender sends one message and waits until
 * all of its subscribers have it, one contender after another, in an order that changes every round (see
 * `roundOrder`); so all of them meet the same load of the machine (other work on it comes and goes) over the
 * same minutes, and each follows each of the others about as often.
 */
async function interleaved(contenders: Contender[], rounds: number, warmUps = 20): Promise<Map<Contender, Deliveries>> {
  await sleep(500);
  for (let i = 0; i < warmUps; i++) {
    for (const c of contenders) {
      await c.send(0);
      await c.swarm.received(c.offsetOf(0), 2_000);
    }
  }
  await sleep(300);
  for (const c of contenders) await c.swarm.collect();
  const sentAt = new Map<Contender, Map<number, number>>(contenders.map((c) => [c, new Map()]));
  for (let round = 1; round <= rounds; round++) {
    for (const index of roundOrder(contenders.length, round)) {
      const c = contenders[index]!;
      const t0 = monotonicMs();
      sentAt.get(c)!.set(c.offsetOf(round), t0);
      await c.send(round);
      await c.swarm.received(c.offsetOf(round), 2_000);
      await sleep(2);
    }
  }
  const results = new Map<Contender, Deliveries>();
  for (const c of contenders) results.set(c, deliveriesSince(sentAt.get(c)!, await c.swarm.collect(), c.count));
  return results;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'emergency-bench-'));
  const pg = process.env.DATABASE_URL && /^postgres/.test(process.env.DATABASE_URL);
  const databaseUrl = (suffix: string) => {
    if (!pg) return `sqlite:${join(dir, `${suffix}.db`)}`;
    const u = new URL(process.env.DATABASE_URL!);
    u.searchParams.set('schema', `bench_${suffix}_${process.pid}`);
    return u.toString();
  };
  const report: Record<string, unknown> = { database: pg ? 'postgres' : 'sqlite' };
  console.log(
    `device gateway benchmark (${pg ? 'PostgreSQL' : 'SQLite'}, node ${process.version}, server in a child process${ACK ? ', devices ack every event' : ''})`,
  );
  report.devicesAck = ACK;

  // 1. Latency.
  if (PARTS.includes('latency')) {
    const url = databaseUrl('latency');
    const ctx = createContext(loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent' }));
    await migrateToLatest(ctx.db);
    const phaseTraceFile = PHASES ? join(dir, 'phases.txt') : undefined;
    const server = await startServerChild(url, { phaseTraceFile });
    // Another build or other node flags (see BENCH_BASELINE_SERVER_BIN), on its own database.
    let variant: { server: ServerChild; ctx: AppContext } | null = null;
    if (BASELINE_LABEL) {
      const variantUrl = databaseUrl('latencyloop');
      const variantCtx = createContext(loadConfig({ DATABASE_URL: variantUrl, LOG_LEVEL: 'silent' }));
      await migrateToLatest(variantCtx.db);
      const nodeArgs = BASELINE_SERVER_NODE_ARGS === undefined ? SERVER_NODE_ARGS : BASELINE_SERVER_NODE_ARGS.split(' ').filter(Boolean);
      variant = { server: await startServerChild(variantUrl, { bin: BASELINE_SERVER_BIN || BIN, nodeArgs }), ctx: variantCtx };
    }
    try {
      console.log(`\nbaseline (same run): 1 connected device, ${DECLARES} sequential declares`);
      const single = await latencyRun(server, ctx, 1, DECLARES);
      summarize('declare HTTP round trip', single.roundTrips);
      const singleFrame = summarize('declare → frame arrived (1 device)', single.arrived);
      const singleRead = summarize('declare → frame read (1 device)', single.read);
      const singlePhases = phaseTraceFile ? await declarePhases(server, phaseTraceFile, single.orgId, single, 1) : undefined;
      if (singlePhases) report.singleDevicePhases = singlePhases;
      const frame = await frameSize(ctx, single.orgId, single.base + DECLARES);
      console.log(
        `  the emergency.declared frame: ${frame.payloadBytes} bytes of JSON, ${frame.wireBytes} bytes on the wire (the floors' and the peers' size)`,
      );
      const bySize: Record<string, unknown>[] = [];
      for (const devices of LATENCY_SIZES) {
        console.log(`\n── ${devices} subscribers ──`);
        // Everything measured at this count is set up first, then measured in interleaved rounds (see `interleaved`).
        const contenders: Contender[] = [];
        const gateway = await gatewayContender('gateway', 'gateway', server, ctx, devices);
        contenders.push(gateway);
        const other = variant ? await gatewayContender('gatewayBaseline', `gateway, ${BASELINE_LABEL}`, variant.server, variant.ctx, devices) : null;
        if (other) contenders.push(other);
        const floorContenders: [string, Contender][] = [];
        for (const [name, label, start] of [
          ['node', 'node:net server, one event loop', () => nodeFloorServer(frame.wireBytes)],
          ['c1', 'C, write(2) loop, 1 thread', () => cFloorServer(1, frame.wireBytes)],
          ['c2', 'C, write(2) loop, 2 threads', () => cFloorServer(2, frame.wireBytes)],
        ] as const) {
          const c = await floorContender(name, label, await start(), devices, frame.wireBytes);
          floorContenders.push([name, c]);
          contenders.push(c);
        }
        const bare = await bareGatewayContender(devices, frame.wireBytes, join(dir, `bare-${devices}.db`));
        contenders.push(bare);
        const peers: Record<string, unknown> = {};
        const peerContenders: [PeerName, Contender][] = [];
        for (const name of PEERS) {
          try {
            const c = await peerContender(name, devices, frame.payloadBytes);
            peerContenders.push([name, c]);
            contenders.push(c);
          } catch (err) {
            console.log(`peer ${PEER_LABELS[name]} skipped: ${(err as Error).message}`);
            peers[name] = { label: PEER_LABELS[name], skipped: (err as Error).message };
          }
        }
        console.log(
          `${contenders.length} systems, ${devices} subscribers each, ${DECLARES} interleaved rounds (each system in turn sends one message and waits until all of its subscribers have it)`,
        );
        const metricsBefore = await serverFanOutBuckets(server.url);
        const cpuBefore = processCpuMs(server.child);
        const cpuBeforeOther = variant ? processCpuMs(variant.server.child) : 0;
        const results = await interleaved(contenders, DECLARES);
        const serverCpuMsPerDeclare = Number(((processCpuMs(server.child) - cpuBefore) / (DECLARES + 20)).toFixed(3));
        const otherCpuMsPerDeclare = variant ? Number(((processCpuMs(variant.server.child) - cpuBeforeOther) / (DECLARES + 20)).toFixed(3)) : 0;
        const metricsAfter = await serverFanOutBuckets(server.url);
        let acked: number | undefined;
        if (ACK) acked = await ackedDevices(ctx, gateway.orgId, gateway.offsetOf(DECLARES), devices);
        for (const c of contenders) await c.close();

        console.log(`\nbaselines (same run): bare TCP fan-out, one ${frame.wireBytes}-byte write to each of ${devices} loopback sockets`);
        const floors: Record<string, { arrived: { p50: number; p99: number; max: number }; read: { p50: number; p99: number; max: number } }> = {};
        for (const [name, c] of floorContenders) {
          const floor = results.get(c)!;
          floors[name] = { arrived: summarize(`${c.label}: arrived, every socket`, floor.arrived), read: percentiles(floor.read) };
          summarize(`${c.label}: arrived, last socket`, floor.last);
        }

        const many = results.get(gateway)!;
        console.log(`\n${devices} connected devices of one org, ${DECLARES} sequential declares`);
        const roundTrip = summarize('declare HTTP round trip', gateway.sendTimes);
        const all = summarize(`declare → frame arrived, every delivery (${devices}/declare)`, many.arrived);
        const firstDevice = summarize('declare → frame arrived, first device', many.first);
        const lastDevice = summarize('declare → frame arrived, last device', many.last);
        const spread = summarize(
          'first → last device (the fan-out, from outside)',
          many.last.map((t, i) => t - many.first[i]!),
        );
        const allRead = summarize(`declare → frame read, every delivery`, many.read);
        console.log(`  missing deliveries: ${many.missing}`);
        if (ACK) console.log(`  devices whose acknowledged offset reached the last event within 15 s: ${acked}/${devices}`);
        console.log(
          `  server CPU per declare${ACK ? ' (with the acks of its frames)' : ''}: ${serverCpuMsPerDeclare} ms with ${devices} devices, ${single.serverCpuMsPerDeclare} ms with 1`,
        );
        // The server's own view (its /metrics histogram): from the event's creation in the transaction until
        // the frame has been written to all of the org's sockets. Bucket bounds, not exact values.
        const serverSide = {
          p50AtMostMs: bucketQuantileMs(metricsBefore, metricsAfter, 0.5),
          p99AtMostMs: bucketQuantileMs(metricsBefore, metricsAfter, 0.99),
        };
        console.log(
          `  server side, commit → written to all ${devices} sockets (the fan-out alone): p50 <= ${serverSide.p50AtMostMs} ms, p99 <= ${serverSide.p99AtMostMs} ms (histogram buckets)`,
        );
        console.log(
          `  p99 target < 5 ms (arrival): ${all.p99 < 5 ? 'met' : 'NOT met'} (${fmt(all.p99)}); ${(all.p99 / floors.node!.arrived.p99).toFixed(2)}x the bare node:net fan-out's p99, ${(all.p99 / floors.c2!.arrived.p99).toFixed(2)}x the 2-thread C floor's; read by the co-located readers: p99 ${fmt(allRead.p99)}`,
        );

        const bareRun = results.get(bare)!;
        console.log(`\nreference (same run): ${bare.label}, ${devices} sockets (bench/baselines/commit-fan-out.ts)`);
        const bareRoundTrip = summarize('POST round trip', bare.sendTimes);
        const bareAll = summarize(`POST → frame arrived, every socket (${devices}/POST)`, bareRun.arrived);
        const bareFirst = summarize('POST → frame arrived, first socket', bareRun.first);
        const bareSpread = summarize(
          'first → last socket',
          bareRun.last.map((t, i) => t - bareRun.first[i]!),
        );
        console.log(`  missing deliveries: ${bareRun.missing}`);
        console.log(
          `  gateway vs this reference: p50 ${fmt(all.p50)} vs ${fmt(bareAll.p50)}, p99 ${fmt(all.p99)} vs ${fmt(bareAll.p99)}, first device p50 ${fmt(firstDevice.p50)} vs ${fmt(bareFirst.p50)}`,
        );
        const bareGateway = {
          label: bare.label,
          everyDeliveryMs: bareAll,
          firstMs: bareFirst,
          spreadMs: bareSpread,
          roundTripMs: bareRoundTrip,
          missing: bareRun.missing,
        };

        const phases = phaseTraceFile ? await declarePhases(server, phaseTraceFile, gateway.orgId, many, devices) : undefined;

        let baselineGateway: Record<string, unknown> | undefined;
        if (other) {
          const o = results.get(other)!;
          console.log(`\nbaseline (same run): the same, ${BASELINE_LABEL} (another server child, its own database)`);
          summarize('declare HTTP round trip', other.sendTimes);
          const otherAll = summarize(`declare → frame arrived, every delivery (${devices}/declare)`, o.arrived);
          summarize('declare → frame arrived, last device', o.last);
          const otherSpread = summarize(
            'first → last device',
            o.last.map((t, i) => t - o.first[i]!),
          );
          console.log(`  missing deliveries: ${o.missing}; server CPU per declare: ${otherCpuMsPerDeclare} ms`);
          console.log(
            `  this server vs ${BASELINE_LABEL}: p50 ${fmt(all.p50)} vs ${fmt(otherAll.p50)}, p99 ${fmt(all.p99)} vs ${fmt(otherAll.p99)}, first → last p50 ${fmt(spread.p50)} vs ${fmt(otherSpread.p50)}`,
          );
          baselineGateway = {
            label: BASELINE_LABEL,
            everyDeliveryMs: otherAll,
            spreadMs: otherSpread,
            missing: o.missing,
            serverCpuMsPerDeclare: otherCpuMsPerDeclare,
          };
        }

        for (const [name, c] of peerContenders) {
          const run = results.get(c)!;
          console.log(`\npeer (same run): ${c.label}, ${devices} subscribers, ${DECLARES} messages of ${frame.payloadBytes} bytes, one at a time`);
          const publish = summarize(name === 'jetstream' ? 'publish → PubAck' : 'publish call', c.sendTimes);
          const arrived = summarize(`sent → frame arrived, every delivery (${devices}/message)`, run.arrived);
          const last = summarize('sent → frame arrived, last subscriber', run.last);
          const peerSpread = summarize(
            'first → last subscriber',
            run.last.map((t, i) => t - run.first[i]!),
          );
          const read = summarize('sent → frame read, every delivery', run.read);
          console.log(`  missing deliveries: ${run.missing}`);
          console.log(
            `  gateway vs ${c.label}: p50 ${fmt(all.p50)} vs ${fmt(arrived.p50)}, p99 ${fmt(all.p99)} vs ${fmt(arrived.p99)}, max ${fmt(all.max)} vs ${fmt(arrived.max)}; peer p99 / gateway p99 = ${(arrived.p99 / all.p99).toFixed(2)} (>= 1: the gateway is at least as good)`,
          );
          peers[name] = {
            label: c.label,
            everyDeliveryMs: arrived,
            everyDeliveryReadMs: read,
            lastMs: last,
            spreadMs: peerSpread,
            publishMs: publish,
            missing: run.missing,
          };
        }
        bySize.push({
          devices,
          declares: DECLARES,
          frameBytes: frame,
          singleDeviceFrameMs: singleFrame,
          singleDeviceReadMs: singleRead,
          declareRoundTripMs: roundTrip,
          everyDeliveryMs: all,
          everyDeliveryReadMs: allRead,
          firstDeviceMs: firstDevice,
          lastDeviceMs: percentiles(many.last).p50,
          lastDevicePercentilesMs: lastDevice,
          spreadMs: spread,
          bareTcpFanOutMs: floors.node!.arrived,
          floorsMs: floors,
          bareGateway,
          serverCommitToAllWrittenMs: serverSide,
          missing: many.missing,
          serverCpuMsPerDeclare,
          singleDeviceServerCpuMsPerDeclare: single.serverCpuMsPerDeclare,
          ...(ACK ? { acked } : {}),
          ...(baselineGateway ? { baselineGateway } : {}),
          ...(phases ? { phases } : {}),
          peers,
        });
      }

      console.log(`\nsummary, sent → frame arrived at every subscriber (p50 / p99 / max, ms; ratio = peer p99 / gateway p99)`);
      const row = (devices: number, label: string, d: { p50: number; p99: number; max: number }, extra = '') =>
        console.log(
          `  ${String(devices).padStart(5)}  ${label.padEnd(44)} ${d.p50.toFixed(2).padStart(7)} / ${d.p99.toFixed(2).padStart(7)} / ${d.max.toFixed(2).padStart(7)}${extra}`,
        );
      for (const entry of bySize as any[]) {
        const g = entry.everyDeliveryMs;
        row(entry.devices, 'gateway (declare → frame)', g);
        row(entry.devices, '  of which the fan-out, first → last device', entry.spreadMs);
        console.log(
          `  ${String(entry.devices).padStart(5)}    server side, commit → all written: p50 <= ${entry.serverCommitToAllWrittenMs.p50AtMostMs} ms, p99 <= ${entry.serverCommitToAllWrittenMs.p99AtMostMs} ms`,
        );
        if (entry.phases) {
          const ph = entry.phases;
          console.log(
            `  ${String(entry.devices).padStart(5)}    phases, p50 (p99): request in ${fmt(ph.receivedMs.p50)} (${fmt(ph.receivedMs.p99)}), to the handler ${fmt(ph.pipelineMs.p50)} (${fmt(ph.pipelineMs.p99)}), to the commit ${fmt(ph.commitMs.p50)} (${fmt(ph.commitMs.p99)}), to the first device ${fmt(ph.firstFrameMs.p50)} (${fmt(ph.firstFrameMs.p99)}); commit → all written ${fmt(ph.fanOutMs.p50)} (${fmt(ph.fanOutMs.p99)})`,
          );
        }
        if (entry.baselineGateway) row(entry.devices, `gateway, ${entry.baselineGateway.label}`, entry.baselineGateway.everyDeliveryMs);
        row(
          entry.devices,
          'bare HTTP POST + commit + fan-out',
          entry.bareGateway.everyDeliveryMs,
          `   ratio ${(entry.bareGateway.everyDeliveryMs.p99 / g.p99).toFixed(2)}`,
        );
        for (const [name, peer] of Object.entries(entry.peers as Record<string, any>)) {
          if (peer.skipped) {
            console.log(`  ${String(entry.devices).padStart(5)}  ${name.padEnd(44)} skipped`);
            continue;
          }
          row(entry.devices, name, peer.everyDeliveryMs, `   ratio ${(peer.everyDeliveryMs.p99 / g.p99).toFixed(2)}`);
        }
      }
      report.latencyBySize = bySize;
      // The largest size, in the layout earlier reports had.
      report.latency = bySize.at(-1);
    } finally {
      await server.stop();
      await ctx.db.close();
      if (variant) {
        await variant.server.stop();
        await variant.ctx.db.close();
      }
    }
  }

  // 2. Idle memory.
  if (PARTS.includes('idle')) {
    const url = databaseUrl('idle');
    const ctx = createContext(loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent' }));
    await migrateToLatest(ctx.db);
    const { tokens } = await provision(ctx, IDLE_DEVICES);
    const server = await startServerChild(url);
    try {
      await sleep(1_000);
      const before = server.rssBytes();
      const t0 = Date.now();
      const sockets = await connectIdle(`${server.url.replace('http', 'ws')}/devices/v1/stream`, tokens);
      const connectSeconds = (Date.now() - t0) / 1000;
      await sleep(5_000);
      const after = server.rssBytes();
      const perDevice = (after - before) / IDLE_DEVICES;
      console.log(`\n${IDLE_DEVICES} idle devices connected in ${connectSeconds.toFixed(1)} s`);
      console.log(`  server RSS before ${(before / 2 ** 20).toFixed(1)} MiB, with devices ${(after / 2 ** 20).toFixed(1)} MiB`);
      console.log(
        `  ${(perDevice / 1024).toFixed(1)} KiB per device → ${Math.floor(2 ** 30 / perDevice).toLocaleString('en-US')} idle devices per GiB (target >= 20,000: ${2 ** 30 / perDevice >= 20_000 ? 'met' : 'NOT met'})`,
      );
      report.idle = { devices: IDLE_DEVICES, rssBeforeMiB: before / 2 ** 20, rssAfterMiB: after / 2 ** 20, devicesPerGiB: Math.floor(2 ** 30 / perDevice) };
      for (const close of sockets) close();
    } finally {
      await server.stop();
      await ctx.db.close();
    }
  }
  if (pg) {
    const { default: pgLib } = await import('pg');
    const client = new pgLib.Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    for (const s of ['latency', 'latencyloop', 'idle']) await client.query(`drop schema if exists bench_${s}_${process.pid} cascade`);
    await client.end();
  }
  rmSync(dir, { recursive: true, force: true });
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify(report));
}

await main();
