/**
 * Fleet benchmark (PostgreSQL): the device push of three deployments, each on its own schema of the same
 * PostgreSQL, measured in the same run:
 *   - single:  today's one process (`serve`, role all) holding every device socket;
 *   - fleet-1: an api process, a worker process and one gateway process (`--role api|worker|gateway`);
 *   - fleet-2: the same with two gateway processes, the devices dealt out over both.
 * At each device count (BENCH_FLEET_DEVICES, default 1,000 and 10,000 devices of one org per deployment):
 *   1. connect: every device socket opened (the gateways' RSS before and after → RSS per idle device socket);
 *   2. rounds: BENCH_DECLARES sequential declares per deployment, interleaved (every deployment in turn, in an
 *      order shuffled anew every round, declares once and waits until all of its devices have the frame), so the
 *      machine's other work weighs on all of them alike: declare → last device p50/p99, every delivery p50/p99,
 *      and the gateways' CPU per declare;
 *   3. burst: BENCH_FLEET_BURST declares sent at once over 4 connections, per deployment in turn: frames
 *      delivered per second of wall time, and per CPU-second of the gateway processes (frames per second per core).
 * The load generator (the device reader processes, bench/lib/device-reader.c, and this process, which declares)
 * shares the machine's cores with the servers and PostgreSQL; its share of the CPU time spent during the rounds
 * and the bursts is reported.
 *
 *   DATABASE_URL=postgres://... node --import tsx bench/fleet.ts
 *   BENCH_FLEET_DEVICES=1000,10000  BENCH_DECLARES=100  BENCH_FLEET_BURST=40  BENCH_JSON=path
 *   BENCH_FLEET_HELPER_TREE=path: a fourth deployment, one process of another checkout (built), provisioned through
 *     that checkout's own services on its own schema: the tree whose fan-out wrote frames to socket descriptors
 *     from a helper thread, against two gateway processes in the same rounds
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as config from '../src/config.js';
import type { AppContext } from '../src/context.js';
import * as context from '../src/create-context.js';
import * as migrate from '../src/db/migrate.js';
import * as principal from '../src/domain/access/principal.js';
import * as devicesService from '../src/domain/devices/service.js';
import * as keysService from '../src/domain/keys/service.js';
import * as orgsService from '../src/domain/orgs/service.js';
import { RawHttpConnection } from './lib/raw-http.js';
import { type Arrivals, DeviceSwarm, monotonicMs } from './lib/device-swarm.js';
import { pidCpuMs, startProcess, stopProcess } from './lib/harness.js';
import { raiseDescriptorLimit, roundOrder } from './lib/rounds.js';
import { dropSchemas, freePort, rssBytes } from './lib/support.js';

const SIZES = (process.env.BENCH_FLEET_DEVICES ?? '1000,10000').split(',').map(Number);
const DECLARES = Number(process.env.BENCH_DECLARES ?? 100);
const BURST = Number(process.env.BENCH_FLEET_BURST ?? 40);
const BURST_CONNECTIONS = 4;
const READERS = 2;
const HELPER_TREE = process.env.BENCH_FLEET_HELPER_TREE ?? '';
const DATABASE_URL = process.env.DATABASE_URL ?? '';
if (!/^postgres/.test(DATABASE_URL)) {
  console.error('the fleet benchmark needs PostgreSQL: DATABASE_URL=postgres://...');
  process.exit(2);
}

// Every deployment holds its devices' sockets at once, on both ends.
raiseDescriptorLimit(Math.max(...SIZES) + 2_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const round2 = (x: number) => Number(x.toFixed(2));

function percentiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: round2(quantile(sorted, 0.5)), p99: round2(quantile(sorted, 0.99)), max: round2(sorted.at(-1) ?? NaN) };
}

/** CPU time every core of the machine spent busy (not idle, not waiting for I/O), in ms. */
function machineBusyMs(): number {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = fields.map(Number);
  return ((user! + nice! + system! + irq! + softirq! + steal!) * 1000) / 100;
}

interface ServerProcess {
  role: string;
  child: ChildProcess;
  url: string;
}

/** The service functions a deployment is provisioned with: this checkout's, or another built checkout's. */
interface Tree {
  bin: string;
  /** Whether `serve` takes `--role` (a tree from before the roles does not). */
  roles: boolean;
  createContext: typeof context.createContext;
  loadConfig: typeof config.loadConfig;
  migrateToLatest: typeof migrate.migrateToLatest;
  operatorCaller: typeof principal.operatorCaller;
  createDevice: typeof devicesService.createDevice;
  createApiKey: typeof keysService.createApiKey;
  createPartner: typeof orgsService.createPartner;
  createEnterprise: typeof orgsService.createEnterprise;
  createOrg: typeof orgsService.createOrg;
}

const THIS_TREE: Tree = {
  bin: fileURLToPath(new URL('../bin/emergency-api.js', import.meta.url)),
  roles: true,
  ...context,
  ...config,
  ...migrate,
  ...principal,
  ...devicesService,
  ...keysService,
  ...orgsService,
};

async function builtTree(root: string): Promise<Tree> {
  const load = (path: string) => import(join(root, 'dist', path));
  return {
    bin: join(root, 'bin/emergency-api.js'),
    roles: false,
    ...(await load('create-context.js')),
    ...(await load('config.js')),
    ...(await load('db/migrate.js')),
    ...(await load('domain/access/principal.js')),
    ...(await load('domain/devices/service.js')),
    ...(await load('domain/keys/service.js')),
    ...(await load('domain/orgs/service.js')),
  };
}

async function startServer(tree: Tree, databaseUrl: string, role: string): Promise<ServerProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = { DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', RATE_LIMIT_PER_KEY: '1000000' };
  const child = await startProcess([tree.bin, 'serve', ...(tree.roles ? ['--role', role] : [])], env, `${url}/readyz`);
  return { role, child, url };
}

interface Deployment {
  name: 'single' | 'fleet1' | 'fleet2' | 'helper';
  label: string;
  schema: string;
  tree: Tree;
  ctx: AppContext;
  api: ServerProcess;
  /** The processes holding device sockets. */
  gateways: ServerProcess[];
  all: ServerProcess[];
}

async function startDeployment(name: Deployment['name'], label: string, tree: Tree = THIS_TREE): Promise<Deployment> {
  const schema = `bench_fleet_${name}_${process.pid}`;
  const url = new URL(DATABASE_URL);
  url.searchParams.set('schema', schema);
  const databaseUrl = url.toString();
  const ctx = tree.createContext(tree.loadConfig({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' }));
  await tree.migrateToLatest(ctx.db);
  if (name === 'single' || name === 'helper') {
    const server = await startServer(tree, databaseUrl, 'all');
    return { name, label, schema, tree, ctx, api: server, gateways: [server], all: [server] };
  }
  const api = await startServer(tree, databaseUrl, 'api');
  const worker = await startServer(tree, databaseUrl, 'worker');
  const gateways = [];
  for (let i = 0; i < (name === 'fleet2' ? 2 : 1); i++) gateways.push(await startServer(tree, databaseUrl, 'gateway'));
  return { name, label, schema, tree, ctx, api, gateways, all: [api, worker, ...gateways] };
}

async function provision({ tree, ctx }: Deployment, devices: number) {
  const operator = tree.operatorCaller();
  const partnerId = (await tree.createPartner(ctx, operator, { name: 'Bench partner' })).partnerId;
  const enterpriseId = (await tree.createEnterprise(ctx, operator, partnerId, { name: 'Bench enterprise' })).enterpriseId;
  const orgId = (await tree.createOrg(ctx, operator, enterpriseId, { name: 'Bench org' })).orgId;
  const { key } = await tree.createApiKey(ctx, operator, { name: 'bench', subjectType: 'org', subjectId: orgId, permissions: ['read', 'write'] });
  const tokens: string[] = [];
  for (let i = 0; i < devices; i++) tokens.push((await tree.createDevice(ctx, operator, orgId, { name: `station ${i}` })).token);
  return { orgId, key, tokens };
}

const DECLARE_BODY = JSON.stringify({ description: 'bench', location: { floorId: '3' } });

/** A deployment at one device count: its devices connected, ready to declare. */
interface Contender {
  deployment: Deployment;
  devices: number;
  orgId: string;
  key: string;
  swarm: DeviceSwarm;
  /** The connection the rounds declare on (opened by `arm`). */
  declarer: RawHttpConnection | null;
  declareRequest: Buffer;
  /** The org's event offset before the next declare. */
  offset: number;
  connectSeconds: number;
  rssPerSocketBytes: number;
  gatewayRssMiB: number[];
}

async function prepare(deployment: Deployment, devices: number): Promise<Contender> {
  const { orgId, key, tokens } = await provision(deployment, devices);
  const rssBefore = deployment.gateways.map((g) => rssBytes(g.child.pid!));
  const swarm = DeviceSwarm.start(READERS, { pong: true });
  const t0 = Date.now();
  // Device i connects to gateway i mod n, as a load balancer spreading connections evenly would.
  const n = deployment.gateways.length;
  for (let g = 0; g < n; g++) {
    await swarm.connect({
      kind: 'device',
      wsUrl: `${deployment.gateways[g]!.url.replace('http', 'ws')}/devices/v1/stream`,
      tokens: tokens.filter((_, i) => i % n === g),
    });
  }
  const connectSeconds = (Date.now() - t0) / 1000;
  await sleep(3_000);
  const rssAfter = deployment.gateways.map((g) => rssBytes(g.child.pid!));
  const grown = rssAfter.reduce((a, b) => a + b, 0) - rssBefore.reduce((a, b) => a + b, 0);
  return {
    deployment,
    devices,
    orgId,
    key,
    swarm,
    declarer: null,
    declareRequest: Buffer.alloc(0),
    offset: 0,
    connectSeconds,
    rssPerSocketBytes: grown / devices,
    gatewayRssMiB: rssAfter.map((b) => round2(b / 2 ** 20)),
  };
}

/**
 * Opens the declaring connections once every deployment has its devices (connecting them takes longer than the
 * server keeps an idle connection open), and warms up JIT, pools and the path through every gateway.
 */
async function arm(contender: Contender): Promise<void> {
  contender.declarer = await RawHttpConnection.open(contender.deployment.api.url);
  contender.declareRequest = contender.declarer.request(
    'POST',
    `/api/public/v1/orgs/${contender.orgId}/emergencies`,
    { authorization: `Bearer ${contender.key}` },
    DECLARE_BODY,
  );
  for (let i = 0; i < 20; i++) await declareAndWait(contender);
  await sleep(300);
  await contender.swarm.collect();
}

async function declare(contender: Contender, connection = contender.declarer!): Promise<void> {
  const answer = await connection.send(contender.declareRequest);
  if (answer.status !== 201) throw new Error(`declare failed on ${contender.deployment.label}: ${answer.status}`);
}

async function currentOffset(contender: Contender): Promise<number> {
  const row = await contender.deployment.ctx.db.db.selectFrom('orgs').select('event_offset').where('id', '=', contender.orgId).executeTakeFirstOrThrow();
  return Number(row.event_offset);
}

async function declareAndWait(contender: Contender): Promise<void> {
  await declare(contender);
  contender.offset = await currentOffset(contender);
  await contender.swarm.received(contender.offset, 10_000);
}

interface Window {
  cpuMs: Map<number, number>;
  busyMs: number;
  selfUs: number;
}

function pidsOf(contenders: Contender[]) {
  return {
    servers: contenders.flatMap((c) => c.deployment.all.map((s) => s.child.pid!)),
    readers: contenders.flatMap((c) => c.swarm.pids),
  };
}

function openWindow(contenders: Contender[]): Window {
  const { servers, readers } = pidsOf(contenders);
  return {
    cpuMs: new Map([...servers, ...readers].map((pid) => [pid, pidCpuMs(pid)])),
    busyMs: machineBusyMs(),
    selfUs: process.cpuUsage().user + process.cpuUsage().system,
  };
}

/** Of the machine's busy CPU time since `window` opened: the load generator's share (readers and this process). */
function generatorShare(window: Window, contenders: Contender[]) {
  const readers = pidsOf(contenders).readers.reduce((sum, pid) => sum + pidCpuMs(pid) - window.cpuMs.get(pid)!, 0);
  const self = (process.cpuUsage().user + process.cpuUsage().system - window.selfUs) / 1000;
  const busy = machineBusyMs() - window.busyMs;
  return { generatorCpuMs: Math.round(readers + self), machineBusyMs: Math.round(busy), share: round2((readers + self) / busy) };
}

const gatewayCpuMs = (contender: Contender) => contender.deployment.gateways.reduce((sum, g) => sum + pidCpuMs(g.child.pid!), 0);

function lastDeviceLatencies(sentAt: Map<number, number>, arrivals: Map<number, Arrivals>, devices: number) {
  const last: number[] = [];
  const every: number[] = [];
  let missing = 0;
  for (const [offset, t0] of sentAt) {
    const entry = arrivals.get(offset);
    if (entry?.arrived.length !== devices) missing++;
    if (!entry || entry.arrived.length === 0) continue;
    for (const at of entry.arrived) every.push(at - t0);
    last.push(Math.max(...entry.arrived) - t0);
  }
  return { lastMs: percentiles(last), everyMs: percentiles(every), missing };
}

async function rounds(contenders: Contender[]) {
  const sentAt = new Map<Contender, Map<number, number>>(contenders.map((c) => [c, new Map()]));
  const cpuBefore = new Map(contenders.map((c) => [c, gatewayCpuMs(c)]));
  const window = openWindow(contenders);
  for (let round = 1; round <= DECLARES; round++) {
    for (const index of roundOrder(contenders.length, round)) {
      const c = contenders[index]!;
      const t0 = monotonicMs();
      await declare(c);
      c.offset++;
      sentAt.get(c)!.set(c.offset, t0);
      await c.swarm.received(c.offset, 10_000);
      await sleep(2);
    }
  }
  const share = generatorShare(window, contenders);
  const results = new Map<Contender, ReturnType<typeof lastDeviceLatencies> & { gatewayCpuMsPerDeclare: number }>();
  for (const c of contenders) {
    results.set(c, {
      ...lastDeviceLatencies(sentAt.get(c)!, await c.swarm.collect(), c.devices),
      gatewayCpuMsPerDeclare: round2((gatewayCpuMs(c) - cpuBefore.get(c)!) / DECLARES),
    });
  }
  return { results, share };
}

/** BURST declares at once over BURST_CONNECTIONS connections; done when every device has every frame. */
async function burst(contender: Contender, all: Contender[]) {
  const first = contender.offset + 1;
  const cpuBefore = gatewayCpuMs(contender);
  const window = openWindow(all);
  // Connections of their own, opened now: ones left idle through the rounds would have been closed by the server.
  const connections = await Promise.all(Array.from({ length: BURST_CONNECTIONS }, () => RawHttpConnection.open(contender.deployment.api.url)));
  const t0 = monotonicMs();
  let next = 0;
  await Promise.all(
    connections.map(async (connection) => {
      while (next < BURST) {
        next++;
        await declare(contender, connection);
      }
    }),
  );
  for (const connection of connections) connection.close();
  contender.offset += BURST;
  for (let offset = first; offset <= contender.offset; offset++) await contender.swarm.received(offset, 30_000);
  const arrivals = await contender.swarm.collect();
  const share = generatorShare(window, all);
  let lastArrival = 0;
  let frames = 0;
  for (let offset = first; offset <= contender.offset; offset++) {
    const entry = arrivals.get(offset);
    if (!entry) continue;
    frames += entry.arrived.length;
    lastArrival = Math.max(lastArrival, ...entry.arrived);
  }
  const wallSeconds = (lastArrival - t0) / 1000;
  const cpuSeconds = (gatewayCpuMs(contender) - cpuBefore) / 1000;
  return {
    frames,
    expectedFrames: BURST * contender.devices,
    wallSeconds: round2(wallSeconds),
    framesPerSecond: Math.round(frames / wallSeconds),
    gatewayCpuSeconds: round2(cpuSeconds),
    framesPerCpuSecond: Math.round(frames / cpuSeconds),
    generatorShare: share,
  };
}

async function main() {
  console.log(
    `fleet benchmark (PostgreSQL, node ${process.version}, ${cpus().length} cores; ${DECLARES} interleaved declares and a burst of ${BURST} per deployment and size)`,
  );
  const deployments = [
    await startDeployment('single', 'one process (role all)'),
    await startDeployment('fleet1', 'fleet, 1 gateway process'),
    await startDeployment('fleet2', 'fleet, 2 gateway processes'),
  ];
  if (HELPER_TREE) deployments.push(await startDeployment('helper', 'one process, helper-thread writes', await builtTree(HELPER_TREE)));
  const idleRss = Object.fromEntries(deployments.map((d) => [d.name, d.gateways.map((g) => round2(rssBytes(g.child.pid!) / 2 ** 20))]));
  const bySize: Record<string, unknown>[] = [];
  try {
    for (const devices of SIZES) {
      console.log(`\n── ${devices} devices of one org per deployment ──`);
      const contenders: Contender[] = [];
      for (const d of deployments) {
        const c = await prepare(d, devices);
        console.log(
          `  ${d.label.padEnd(28)} connected in ${c.connectSeconds.toFixed(1)} s; gateway RSS ${c.gatewayRssMiB.join(' + ')} MiB, ${(c.rssPerSocketBytes / 1024).toFixed(1)} KiB per device socket`,
        );
        contenders.push(c);
      }
      for (const c of contenders) await arm(c);
      const { results, share } = await rounds(contenders);
      console.log(`  rounds: load generator ${Math.round(share.share * 100)} % of the machine's busy CPU time`);
      const entry: Record<string, any> = { devices, declares: DECLARES, burst: BURST, roundsGeneratorShare: share, deployments: {} };
      for (const c of contenders) {
        const r = results.get(c)!;
        console.log(
          `  ${c.deployment.label.padEnd(28)} declare → last device p50 ${r.lastMs.p50} / p99 ${r.lastMs.p99} ms; every delivery p50 ${r.everyMs.p50} / p99 ${r.everyMs.p99} ms; gateway CPU ${r.gatewayCpuMsPerDeclare} ms/declare; missing ${r.missing}`,
        );
        entry.deployments[c.deployment.name] = {
          label: c.deployment.label,
          gateways: c.deployment.gateways.length,
          connectSeconds: round2(c.connectSeconds),
          rssPerSocketKiB: round2(c.rssPerSocketBytes / 1024),
          gatewayRssMiB: c.gatewayRssMiB,
          ...r,
        };
      }
      for (const c of contenders) {
        const b = await burst(c, contenders);
        console.log(
          `  ${c.deployment.label.padEnd(28)} burst: ${b.frames}/${b.expectedFrames} frames in ${b.wallSeconds} s → ${b.framesPerSecond} frames/s; ${b.framesPerCpuSecond} frames per gateway CPU-second; load generator ${Math.round(b.generatorShare.share * 100)} %`,
        );
        entry.deployments[c.deployment.name].burst = b;
      }
      bySize.push(entry);
      for (const c of contenders) {
        c.declarer?.close();
        await c.swarm.close();
      }
      await sleep(2_000);
    }
  } finally {
    for (const d of deployments) {
      for (const s of d.all) await stopProcess(s.child);
      await d.ctx.db.close();
    }
    await dropSchemas(
      DATABASE_URL,
      deployments.map((d) => d.schema),
    );
  }
  const report = { cores: cpus().length, idleGatewayRssMiB: idleRss, bySize };
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify(report));
  else console.log(JSON.stringify(report));
}

await main();
