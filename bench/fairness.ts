// Fair share between tenants (extensions §13): tenant B's declare → frame latency at its base station, quiet and
// while tenant A abuses the service with requests it allows, in the same run, one abuse after another.
//   - one `serve` child under an open-file limit of BENCH_FAIRNESS_OPEN_FILES (default 1,024, a common default), so
//     that its connection budget can be reached in a short run; the per-key rate limit at its default;
//   - tenant A: the demo org (its partner) with BENCH_FAIRNESS_OPEN_EMERGENCIES (default 2,000) open emergencies;
//     tenant B: an org of another partner with one base station (a C device reader, acknowledging every frame) and
//     fresh base stations and a fresh key kept for the checks that need one seen for the first time;
//   - for each abuse: B declares one at a time for BENCH_FAIRNESS_SECONDS (default 10) quiet, then as long again
//     while A abuses (after the abuse has run for a moment), each declare timed from its request's write to the
//     kernel's arrival stamp of its frame at B's station (bench/lib/tenant-probe.ts);
//   - first the floors the abuses are read against: A declaring at its rate limit, and no request of A while a process
//     outside the service spins on a core (at nice 0, then 19);
//   - the abuses: A's read key polling its own CAP Atom feed (3 pollers); A's write key ingesting CAP alerts at the
//     body limit (1,800 <info> blocks, then 7,100 <area> blocks) at a fifth of its rate limit; four 56 MB message
//     bodies at once, over and over; A holding every event stream and device socket it can (B then connects fresh
//     stations and opens a stream); 1,000 idle, trickling or unfinished-upgrade sockets from 127.0.0.2 (with /healthz
//     polled on new connections); a 5 s acknowledgement deadline with 500 silent A stations and A declaring at 10/s,
//     then the same B measurement with the abuse stopped and its overdue events watched; a flood of unknown keys from
//     B's own address (as behind a proxy), with B declaring on a key never used before and fresh stations connecting.
// §13's bound: B's abused p99 at most 2× its quiet p99 of the same run, and never above 250 ms.
// BENCH_FAIRNESS_DEPLOYMENT=fleet (PostgreSQL only) runs the same abuses against a fleet: an api, a gateway and a worker
// process (`serve --role ...`), each under the same open-file limit; REST goes to the api, device sockets and event
// streams to the gateway, and B's frames cross from the api's commit to the gateway through PostgreSQL.
// Usage: node --import tsx bench/fairness.ts
//   (DATABASE_URL=postgres://... benches the service on PostgreSQL in a throwaway schema; BENCH_JSON=path writes the
//   raw results as JSON)
import { type ChildProcess, spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { loadConfig } from '../src/config.js';
import { BIN, cli, stopProcess, waitForHttp } from './lib/harness.js';
import { largeCapAlert, type LargeCapVariant } from './lib/large-cap-alerts.js';
import { benchDatabase, benchServerEnv, freePort, writeBenchJson } from './lib/support.js';
import {
  type Abuse,
  type AbuseSummary,
  abuseLoop,
  connectFresh,
  fetchStatus,
  healthWatch,
  holdDeviceSockets,
  holdStreams,
  openStream,
  postParts,
  slowSockets,
  unknownKey,
} from './lib/tenant-abuse.js';
import { type ProbeFigures, TenantProbe } from './lib/tenant-probe.js';

const SECONDS = Number(process.env.BENCH_FAIRNESS_SECONDS ?? 10);
const OPEN_FILES = Number(process.env.BENCH_FAIRNESS_OPEN_FILES ?? 1024);
const OPEN_EMERGENCIES = Number(process.env.BENCH_FAIRNESS_OPEN_EMERGENCIES ?? 2_000);
/** Device sockets A tries to hold: as many as the server has descriptors, so more than its budget. */
const HELD_SOCKETS = Number(process.env.BENCH_FAIRNESS_HELD_SOCKETS ?? OPEN_FILES);
/** Keys of A holding event streams, each as many as a key may (STREAMS_PER_KEY's default). */
const STREAM_KEYS = 20;
const STREAMS_PER_KEY = 20;
const FEED_POLLERS = 3;
const CAP_BLOCKS: Record<LargeCapVariant, number> = { info: 1_800, area: 7_100 };
const CAP_BODY_LIMIT = 256 * 1024;
const LARGE_BODIES = 4;
/** Five inline PNGs of 8.4 MB: 56 MB of base64, within the 64 MiB body limit and the 10 MiB per attachment. */
const ATTACHMENT_BYTES = 8_400_000;
const SLOW_SOCKETS = 1_000;
const SLOW_ADDRESS = '127.0.0.2';
const SILENT_DEVICES = 500;
const DEADLINE_SECONDS = 5;
const DEADLINE_DECLARES_PER_SECOND = 10;
const BAD_KEY_LOOPS = 16;
/** Fresh base stations of B each connection check tries. */
const FRESH_STATIONS = 5;
/** Setup keys of A, so that its open emergencies are declared within the rate limit of each. */
const SETUP_KEYS = 10;
/** The load generator's nice value (the servers keep 0). */
const LOAD_GENERATOR_NICE = 10;
const DEPLOYMENT = process.env.BENCH_FAIRNESS_DEPLOYMENT ?? 'single';
/** BENCH_FAIRNESS_ONLY=cap-ingest-info,ack-deadline runs those abuses alone (ids as in the report). */
const ONLY = process.env.BENCH_FAIRNESS_ONLY?.split(',')
  .map((id) => id.trim())
  .filter(Boolean);
const chosen = (id: string) => !ONLY || ONLY.some((only) => id === only || id.startsWith(`${only}-`));
if (DEPLOYMENT !== 'single' && DEPLOYMENT !== 'fleet') throw new Error('BENCH_FAIRNESS_DEPLOYMENT is single or fleet');

if (!(SECONDS > 0 && OPEN_FILES >= 256 && OPEN_EMERGENCIES >= 1)) throw new Error('BENCH_FAIRNESS_SECONDS > 0, BENCH_FAIRNESS_OPEN_FILES >= 256');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The rate limit `serve` runs with: its default, since the abuses are sized by it. */
const RATE_LIMIT = loadConfig({}).RATE_LIMIT_PER_KEY;

interface Phase {
  id: string;
  label: string;
  quiet: ProbeFigures;
  abused: ProbeFigures;
  abuse: AbuseSummary & Record<string, unknown>;
  /** Fresh base stations of B connecting during the abuse. */
  freshStations?: Awaited<ReturnType<typeof connectFresh>>;
  /** The status of an event stream of B opened during the abuse. */
  streamOfB?: number;
  /** /healthz on new connections during the abuse. */
  health?: Awaited<ReturnType<ReturnType<typeof healthWatch>['stop']>>;
}

const db = benchDatabase('fairness');
const servers: ChildProcess[] = [];
let probe: TenantProbe | undefined;
/** A's silent stations of the deadline abuse, held through the watch that follows it. */
let silent: Awaited<ReturnType<typeof holdDeviceSockets>> | undefined;
const phases: Phase[] = [];
let report: Record<string, unknown> = {};

try {
  if (DEPLOYMENT === 'fleet' && db.dialect !== 'postgres') throw new Error('a fleet needs PostgreSQL: set DATABASE_URL=postgres://...');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = benchServerEnv(db, port);
  const demo = cli(['admin', 'demo'], env) as { orgId: string; key: string; adminKey: string };
  process.on('exit', () => {
    for (const s of servers) s.kill('SIGKILL');
  });
  /** Starts `serve` (with `--role role` in a fleet) on `onPort`. */
  const serve = async (onPort: number, role?: string) => {
    const serverEnv: Record<string, string | undefined> = { ...process.env, ...env, PORT: String(onPort) };
    delete serverEnv.RATE_LIMIT_PER_KEY;
    // Through bash to lower the descriptor limit of the server alone; `exec` keeps the pid.
    const args = [
      process.execPath,
      ...(process.env.BENCH_FAIRNESS_SERVER_FLAGS?.split(' ').filter(Boolean) ?? []),
      BIN,
      'serve',
      ...(role ? ['--role', role] : []),
    ];
    servers.push(spawn('/bin/bash', ['-c', `ulimit -n ${OPEN_FILES}; exec "$@"`, 'bash', ...args], { env: serverEnv, stdio: ['ignore', 'ignore', 'inherit'] }));
    await waitForHttp(`http://127.0.0.1:${onPort}/readyz`, 60_000);
  };
  // REST on `port`; device sockets and event streams on `gatewayPort` (the same process unless in a fleet).
  let gatewayPort = port;
  if (DEPLOYMENT === 'fleet') {
    gatewayPort = await freePort();
    await serve(port, 'api');
    await serve(gatewayPort, 'gateway');
    await serve(await freePort(), 'worker');
  } else {
    await serve(port);
  }
  const gateway = `http://127.0.0.1:${gatewayPort}`;
  // The load generator yields the CPU to the servers (started above, at the default priority): on a machine of its own the
  // service would not share its cores with its clients. Processes started from here on (the device readers) inherit it.
  setPriority(LOAD_GENERATOR_NICE);

  const admin = (method: string, path: string, body?: unknown) => json(method, `${base}/api/admin/v1${path}`, demo.adminKey, body);
  const api = (orgId: string) => `${base}/api/public/v1/orgs/${orgId}`;
  const streamsOf = (orgId: string) => `${gateway}/api/public/v1/orgs/${orgId}/stream`;
  const mintKey = async (orgId: string, permissions: string[], name: string) =>
    ((await admin('POST', '/api-keys', { name, subject: { type: 'org', id: orgId }, permissions })) as { key: string }).key;
  const devices = async (orgId: string, count: number, name: string) => {
    const tokens: string[] = [];
    for (let i = 0; i < count; i += 1_000) {
      const n = Math.min(1_000, count - i);
      const made = (await admin('POST', `/orgs/${orgId}/devices`, {
        devices: Array.from({ length: n }, (_, j) => ({ name: `${name} ${i + j}` })),
      })) as { items: { token: string }[] };
      tokens.push(...made.items.map((d) => d.token));
    }
    return tokens;
  };

  // Tenant B: an org of its own partner.
  const partnerB = (await admin('POST', '/partners', { name: 'Tenant B partner' })) as { partnerId: string };
  const enterpriseB = (await admin('POST', `/partners/${partnerB.partnerId}/enterprises`, { name: 'Tenant B enterprise' })) as { enterpriseId: string };
  const orgB = ((await admin('POST', `/enterprises/${enterpriseB.enterpriseId}/orgs`, { name: 'Tenant B' })) as { orgId: string }).orgId;
  const keyB = await mintKey(orgB, ['read', 'write'], 'tenant B probe');
  const unusedKeyB = await mintKey(orgB, ['read', 'write'], 'tenant B, first used under the flood');
  const [stationB, ...freshB] = await devices(orgB, 1 + 3 * FRESH_STATIONS, 'tenant B station');
  const freshStations = () => freshB.splice(0, FRESH_STATIONS);

  // Tenant A: the demo org, its open emergencies, a read key and its base stations.
  const orgA = demo.orgId;
  const readKeyA = await mintKey(orgA, ['read'], 'tenant A feed reader');
  const streamKeysA = await Promise.all(Array.from({ length: STREAM_KEYS }, (_, i) => mintKey(orgA, ['read'], `tenant A streams ${i}`)));
  // Enough keys for LARGE_BODIES uploads at once within each key's OFFLOAD_PER_KEY (2) heavy requests.
  const uploadKeysA = await Promise.all(Array.from({ length: LARGE_BODIES / 2 }, (_, i) => mintKey(orgA, ['read', 'write'], `tenant A uploads ${i}`)));
  const setupKeys = await Promise.all(Array.from({ length: SETUP_KEYS }, (_, i) => mintKey(orgA, ['read', 'write'], `tenant A setup ${i}`)));
  const stationsA = await devices(orgA, Math.max(SILENT_DEVICES, HELD_SOCKETS), 'tenant A station');
  const declareA = (key: string) =>
    fetchStatus(`${api(orgA)}/emergencies`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ description: 'tenant A', location: { floorId: '2' } }),
    });
  let declaredA = 0;
  await Promise.all(
    setupKeys.map(async (key, k) => {
      for (let i = k; i < OPEN_EMERGENCIES; i += SETUP_KEYS) {
        for (;;) {
          const status = await declareA(key);
          if (status === 201) break;
          if (status !== 429) throw new Error(`tenant A's setup declare answered ${status}`);
          await sleep(500);
        }
        declaredA++;
      }
    }),
  );
  const emergencyA = ((await json('POST', `${api(orgA)}/emergencies`, demo.key, { description: 'tenant A messages' })) as { emergencyId: string }).emergencyId;

  probe = await TenantProbe.open(base, orgB, keyB, stationB!, gateway);
  await probe.measure(Math.min(3, SECONDS)); // warm-up
  console.log(
    `database: ${db.dialect}; deployment: ${DEPLOYMENT}; server open-file limit ${OPEN_FILES}; rate limit ${RATE_LIMIT}/s per key; ${declaredA} open emergencies of A`,
  );

  /** B quiet, then B while `start`'s abuse runs (after `settleMs`), then the abuse stopped. */
  async function phase(
    id: string,
    label: string,
    start: () => Promise<Abuse & Record<string, unknown>> | (Abuse & Record<string, unknown>),
    options: { settleMs?: number; during?: () => Promise<Partial<Phase>>; key?: string } = {},
  ): Promise<Phase> {
    const quiet = await probe!.measure(SECONDS);
    const abuse = await start();
    await sleep(options.settleMs ?? 1_000);
    const [abused, extra] = await Promise.all([probe!.measure(SECONDS, 25, options.key), options.during?.() ?? Promise.resolve({})]);
    const { stop, ...details } = abuse;
    const summary = { ...details, ...(await stop()) };
    const result: Phase = { id, label, quiet, abused, abuse: summary, ...extra };
    phases.push(result);
    const ratio = abused.p99 / quiet.p99;
    console.log(
      `  ${id.padEnd(20)} B p50/p99 quiet ${quiet.p50}/${quiet.p99} ms, abused ${abused.p50}/${abused.p99} ms (${ratio.toFixed(2)}×; ${abused.n} of ${abused.declares} declares timed); A: ${JSON.stringify(summary.statuses)}`,
    );
    await sleep(2_000);
    return result;
  }

  // 0. The floors the abuses are read against: A's ordinary traffic (declares at its rate limit), and no request of A at
  // all while a process outside the service spins on one of the two cores, at the service's priority and at the pool
  // threads' (nice 19).
  if (chosen('ordinary'))
    await phase(`ordinary`, `while A declares at its rate limit (${RATE_LIMIT}/s), nothing more`, () =>
      abuseLoop(() => declareA(demo.key), { concurrency: 4, perSecond: RATE_LIMIT }),
    );
  for (const nice of [0, 19].filter((n) => chosen(`cpu-hog-${n}`))) {
    await phase(`cpu-hog-${nice}`, `no request of A; a process outside the service spins on one core at nice ${nice}`, () => {
      const hog = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
      if (hog.pid !== undefined) setPriority(hog.pid, nice);
      return {
        stop: async () => {
          hog.kill('SIGKILL');
          return { rounds: 0, statuses: {} };
        },
      };
    });
  }

  // 1. The CAP Atom feed, polled by A's read key.
  if (chosen('cap-feed'))
    await phase('cap-feed', `while A polls its CAP Atom feed (${FEED_POLLERS} pollers, ${declaredA} open emergencies)`, () =>
      abuseLoop(() => fetchStatus(`${api(orgA)}/cap/feed`, { headers: { authorization: `Bearer ${readKeyA}` } }), {
        concurrency: FEED_POLLERS,
        honourRetryAfter: true,
      }),
    );

  // 2. CAP ingest at the body limit, at a fifth of the rate limit.
  for (const variant of (['info', 'area'] as const).filter((v) => chosen(`cap-ingest-${v}`))) {
    const sample = largeCapAlert(variant, CAP_BLOCKS[variant], 'sample', CAP_BODY_LIMIT);
    const kib = Math.round(Buffer.byteLength(sample.xml) / 1024);
    await phase(`cap-ingest-${variant}`, `while A ingests ${kib} KiB CAP alerts of ${sample.blocks} <${variant}> at ${RATE_LIMIT / 5}/s`, () => {
      const loop = abuseLoop(
        (i) =>
          fetchStatus(`${api(orgA)}/cap`, {
            method: 'POST',
            headers: { authorization: `Bearer ${demo.key}`, 'content-type': 'application/cap+xml' },
            body: largeCapAlert(variant, CAP_BLOCKS[variant], `BENCH-${variant}-${process.pid}-${i}`, CAP_BODY_LIMIT).xml,
          }),
        { concurrency: 20, perSecond: RATE_LIMIT / 5 },
      );
      return { ...loop, blocks: sample.blocks, bodyBytes: Buffer.byteLength(sample.xml) };
    });
  }

  // 3. Four 56 MB message bodies at once, over and over (the same attachments, a new text each time), from two keys
  // (the heavy requests each key may have in flight), pausing as Retry-After asks when refused.
  if (chosen('large-bodies')) {
    const attachments = Array.from({ length: 5 }, (_, i) => ({
      src: `data:image/png;base64,${pngOf(ATTACHMENT_BYTES, i).toString('base64')}`,
      caption: `frame ${i}`,
    }));
    const tail = Buffer.from(`,"author":{"type":"agent","name":"tenant A"},"attachments":${JSON.stringify(attachments)}}`);
    const mb = Math.round(tail.length / 1e6);
    await phase('large-bodies', `while A posts ${LARGE_BODIES} ${mb} MB message bodies at once, over and over`, () => ({
      ...abuseLoop(
        (i) =>
          postParts(
            `${api(orgA)}/emergencies/${emergencyA}/messages`,
            { authorization: `Bearer ${uploadKeysA[i % uploadKeysA.length]}`, 'content-type': 'application/json' },
            [Buffer.from(`{"content":"camera frames ${i}"`), tail],
          ),
        { concurrency: LARGE_BODIES, honourRetryAfter: true },
      ),
      bodyBytes: tail.length,
    }));
  }

  // 4. A holds every event stream and device socket it can; B's fresh stations and an event stream of B then connect.
  if (chosen('device-sockets'))
    await phase(
      'device-sockets',
      `while A holds every event stream and device socket it can (${STREAM_KEYS * STREAMS_PER_KEY} and ${HELD_SOCKETS} tried)`,
      async () => {
        const streams = await holdStreams(`${streamsOf(orgA)}`, streamKeysA, STREAMS_PER_KEY);
        const held = await holdDeviceSockets(gatewayPort, stationsA.slice(0, HELD_SOCKETS));
        const statuses: Record<string, number> = {};
        for (const [kind, counts] of [
          ['stream', streams.statuses],
          ['socket', held.statuses],
        ] as const) {
          for (const [status, n] of Object.entries(counts)) statuses[`${kind} ${status}`] = n;
        }
        return {
          streamsHeld: streams.accepted,
          socketsHeld: held.accepted,
          stop: async () => {
            streams.close();
            held.close();
            return { rounds: STREAM_KEYS * STREAMS_PER_KEY + HELD_SOCKETS, statuses };
          },
        };
      },
      {
        during: async () => {
          const stream = await openStream(streamsOf(orgB), keyB);
          stream.close();
          return { freshStations: await connectFresh(gatewayPort, freshStations()), streamOfB: stream.status };
        },
      },
    );

  // 5. Slow clients from another address; /healthz and B's fresh stations meanwhile.
  if (chosen('slow-clients'))
    await phase(
      'slow-clients',
      `while ${SLOW_SOCKETS} idle, trickling or unfinished-upgrade sockets come from ${SLOW_ADDRESS}`,
      () => slowSockets(gatewayPort, SLOW_SOCKETS, SLOW_ADDRESS),
      {
        settleMs: 3_000,
        during: async () => {
          const watch = healthWatch(`${gateway}/healthz`);
          const freshStationsResult = await connectFresh(gatewayPort, freshStations());
          await sleep(SECONDS * 1000 - 500);
          return { freshStations: freshStationsResult, health: await watch.stop() };
        },
      },
    );

  // 6. An acknowledgement deadline with silent stations, declares at 10/s; then the watch of their overdue events.
  if (chosen('ack-deadline')) {
    const deadline = await phase(
      'ack-deadline',
      `while A declares at ${DEADLINE_DECLARES_PER_SECOND}/s with a ${DEADLINE_SECONDS} s ack deadline and ${SILENT_DEVICES} silent stations`,
      async () => {
        await admin('PATCH', `/orgs/${orgA}`, { ackDeadlineSeconds: DEADLINE_SECONDS });
        silent = await holdDeviceSockets(gatewayPort, stationsA.slice(0, SILENT_DEVICES));
        const loop = abuseLoop(() => declareA(demo.key), { concurrency: 4, perSecond: DEADLINE_DECLARES_PER_SECOND });
        return { ...loop, silentConnected: silent.accepted };
      },
      { settleMs: (DEADLINE_SECONDS + 1) * 1000 },
    );
    // The declares have stopped; their deadlines pass, and the overdue deliveries stay watched.
    await sleep((DEADLINE_SECONDS + 1) * 1000);
    const abused = await probe.measure(SECONDS);
    const overdue = await countEvents(api(orgA), demo.key, 'emergency.delivery_overdue');
    phases.push({
      id: 'ack-deadline-after',
      label: `after A stopped declaring (${overdue} overdue events watched, the silent stations connected)`,
      quiet: deadline.quiet,
      abused,
      abuse: { rounds: 0, statuses: {}, overdueEvents: overdue },
    });
    console.log(`  ${'ack-deadline-after'.padEnd(20)} B p50/p99 ${abused.p50}/${abused.p99} ms; ${overdue} overdue events of A`);
    silent?.close();
    silent = undefined;
    await admin('PATCH', `/orgs/${orgA}`, { ackDeadlineSeconds: null });
    await sleep(2_000);
  }

  // 7. Unknown keys from B's own address; B declares with a key never used before, fresh stations connect.
  if (chosen('bad-keys'))
    await phase(
      'bad-keys',
      `while A floods unknown keys from B's address (${BAD_KEY_LOOPS} connections; B on a key never used before)`,
      () =>
        abuseLoop(() => fetchStatus(`${api(orgA)}/events?limit=1`, { headers: { authorization: `Bearer ${unknownKey()}` } }), { concurrency: BAD_KEY_LOOPS }),
      { key: unusedKeyB, during: async () => ({ freshStations: await connectFresh(gatewayPort, freshStations()) }) },
    );

  const probeFault = await probe.verify();
  report = {
    database: db.dialect,
    deployment: DEPLOYMENT,
    seconds: SECONDS,
    openFiles: OPEN_FILES,
    rateLimitPerKey: RATE_LIMIT,
    openEmergenciesOfA: declaredA,
    phases,
    faults: probeFault ? [probeFault] : [],
  };
  if (probeFault) console.log(`  FAULT: ${probeFault}`);
} finally {
  silent?.close();
  await probe?.close();
  for (const s of servers.reverse()) await stopProcess(s);
  await db.drop();
}
writeBenchJson(report);

/** A PNG the service accepts (signature, header chunk, one data chunk), its data differing by `seed`. */
function pngOf(size: number, seed: number): Buffer {
  const header = Buffer.from('89504e470d0a1a0a0000000d49484452000004000000030008060000002a3f9d1b', 'hex');
  const dataLength = size - header.length - 12;
  const chunkHead = Buffer.alloc(8);
  chunkHead.writeUInt32BE(dataLength, 0);
  chunkHead.write('IDAT', 4, 'latin1');
  const data = Buffer.alloc(dataLength, seed + 1);
  for (let i = 0; i < dataLength; i += 4096) data[i] = (i / 4096 + seed) & 0xff;
  return Buffer.concat([header, chunkHead, data, Buffer.alloc(4)]);
}

/** Events of `eventType` in an org's stream, paged through its event feed. */
async function countEvents(apiBase: string, key: string, eventType: string): Promise<number> {
  let count = 0;
  let url = `${apiBase}/events?after=0&limit=500`;
  for (;;) {
    const page = (await json('GET', url, key)) as { items: { event: { eventType: string } }[]; nextCursor: string | null };
    count += page.items.filter((i) => i.event.eventType === eventType).length;
    if (!page.nextCursor) return count;
    url = `${apiBase}/events?cursor=${encodeURIComponent(page.nextCursor)}&limit=500`;
  }
}

async function json(method: string, url: string, key: string, body?: unknown): Promise<unknown> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${(await res.text()).slice(0, 300)}`);
  return res.status === 204 ? null : res.json();
}
