// The event feed and delivery receipts of a busy org, next to the bare echo baseline measured in the same run:
//   - one org with BENCH_RECEIPT_DEVICES (default 1,000) base stations, every one connected over WebSocket
//     (the `ws` client, as firmware would) and acknowledging every event it receives;
//   - BENCH_RECEIPT_EVENTS (default 1,000) events in its stream: emergencies declared, re-categorized and some
//     resolved, made while the devices are connected, so every device acks them live and the gateway writes its
//     ack history as it does in service; the load starts once GET /orgs/{org_id}/devices shows every device at lag 0
//     (acks the server received but did not record are sent again after 15 s, and the devices concerned counted);
//   - measured: GET .../emergencies/{emergency_id}/receipts of one emergency with 3 events, the same with
//     ?detail=devices (who acknowledged each event, and when), and GET /orgs/{org_id}/events?limit=100 from the
//     middle of the stream, each against a bare Fastify JSON echo.
// The server runs in its own process (`emergency-api serve`), the devices and autocannon in this one; besides
// requests per second, the table reports each server's CPU time per request, which other load on the machine
// hardly skews.
// Usage: node --import tsx bench/receipts.ts
//   (BENCH_DURATION=seconds, BENCH_CONNECTIONS=n; BENCH_DATABASE_URL or DATABASE_URL=postgres://... benches the
//   service on PostgreSQL in a throwaway schema; BENCH_JSON=path writes the raw results as JSON)
import { join } from 'node:path';
import WebSocket from 'ws';
import { createContext } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { operatorCaller } from '../src/domain/access/principal.js';
import { createCategory } from '../src/domain/categories/service.js';
import { createDevice } from '../src/domain/devices/service.js';
import { createApiKey } from '../src/domain/keys/service.js';
import { createEnterprise, createOrg, createPartner } from '../src/domain/orgs/service.js';
import { BIN, CONNECTIONS, cpuRatiosOf, DURATION, load, printTable, ratiosOf, ROOT, type Result, startProcess, stopProcess } from './lib/harness.js';
import { benchDatabase, freePort, writeBenchJson } from './lib/support.js';

const DEVICES = Number(process.env.BENCH_RECEIPT_DEVICES ?? 1_000);
const EVENTS = Number(process.env.BENCH_RECEIPT_EVENTS ?? 1_000);
/** Emergency flows (declare, re-categorize, resolve) run at once while the events are made. */
const WRITERS = 4;
const PAGE = 100;
/**
 * ?detail=devices answers with one entry per device and event (3,000 here) and costs a hundred times a plain
 * receipts call: it is loaded over a few connections, so its latency is the time to answer one call rather than
 * the wait behind 50 others.
 */
const DETAIL_CONNECTIONS = 4;
if (!(EVENTS >= 2 * PAGE && DEVICES >= 1)) throw new Error(`BENCH_RECEIPT_EVENTS must be at least ${2 * PAGE} and BENCH_RECEIPT_DEVICES at least 1`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seconds = (since: number) => Number(((Date.now() - since) / 1000).toFixed(1));

// BENCH_DATABASE_URL (as bench/mcp.ts) or DATABASE_URL (as bench/run-all.ts sets it, with the schema to use).
if (process.env.BENCH_DATABASE_URL && !/^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '')) process.env.DATABASE_URL = process.env.BENCH_DATABASE_URL;

const db = benchDatabase('receipts');
const results: Result[] = [];
const devices: DeviceClient[] = [];
let service: Awaited<ReturnType<typeof startProcess>> | undefined;
let report: Record<string, unknown> = {};
/** Set once the run is over: device sockets closing from then on are expected. */
let closing = false;

try {
  // Provisioning, in this process with the service's own functions (as bench/devices.ts does).
  let t0 = Date.now();
  const ctx = createContext(loadConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' }));
  let org: { orgId: string; key: string; tokens: string[] };
  try {
    await migrateToLatest(ctx.db);
    const operator = operatorCaller();
    const partnerId = (await createPartner(ctx, operator, { name: 'Bench partner' })).partnerId;
    const enterpriseId = (await createEnterprise(ctx, operator, partnerId, { name: 'Bench enterprise' })).enterpriseId;
    const orgId = (await createOrg(ctx, operator, enterpriseId, { name: 'Bench org' })).orgId;
    await createCategory(ctx, operator, orgId, { name: 'Fire', color: '#D32F2F', severity: 5, responseLevel: 'evacuate' });
    await createCategory(ctx, operator, orgId, { name: 'Medical', color: '#1976D2', severity: 3, responseLevel: 'medical' });
    const { key } = await createApiKey(ctx, operatorCaller(), { name: 'bench', subjectType: 'org', subjectId: orgId, permissions: ['read', 'write'] });
    const tokens: string[] = [];
    for (let i = 0; i < DEVICES; i++) tokens.push((await createDevice(ctx, operatorCaller(), orgId, { name: `station ${String(i).padStart(4, '0')}` })).token);
    org = { orgId, key, tokens };
  } finally {
    await ctx.db.close();
  }
  const provisionSeconds = seconds(t0);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  service = await startProcess(
    [BIN, 'serve'],
    { DATABASE_URL: db.url, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', RATE_LIMIT_PER_KEY: '1000000' },
    `${base}/healthz`,
  );
  const api = `${base}/api/public/v1/orgs/${org.orgId}`;
  const auth = { authorization: `Bearer ${org.key}` };

  t0 = Date.now();
  await connectDevices(`${base.replace('http', 'ws')}/devices/v1/stream`, org.tokens);
  const connectSeconds = seconds(t0);

  // The events, made through the API while every device is connected and acknowledging.
  t0 = Date.now();
  const flows = flowSizes(EVENTS);
  const measured = flows.findIndex((size, i) => size === 3 && i >= flows.length / 2);
  let emergencyId = '';
  let nextFlow = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (nextFlow < flows.length) {
        const i = nextFlow++;
        const id = await runFlow(api, auth, i, flows[i]!);
        if (i === measured) emergencyId = id;
      }
    }),
  );
  const first = (await getJson(`${api}/events?limit=1`, auth)) as { lastOffset: number };
  if (first.lastOffset !== EVENTS) throw new Error(`the org's stream ends at offset ${first.lastOffset}, expected ${EVENTS}`);
  await allReceived(EVENTS, 120_000);
  const eventsSeconds = seconds(t0);
  t0 = Date.now();
  const unrecordedAcks = await allAcknowledged(api, auth, 90_000, 15_000);
  const ackSeconds = seconds(t0);
  console.log(
    `${DEVICES} devices provisioned in ${provisionSeconds} s, connected in ${connectSeconds} s; ${EVENTS} events (${flows.length} emergencies) made and received by every device in ${eventsSeconds} s; every ack recorded ${ackSeconds} s later`,
  );

  // One call of each before measuring, so a broken setup fails loudly instead of benchmarking errors.
  const after = Math.floor(EVENTS / 2) - PAGE / 2;
  const receiptsUrl = `${api}/emergencies/${emergencyId}/receipts`;
  const pageUrl = `${api}/events?limit=${PAGE}&after=${after}`;
  const receipts = (await getJson(receiptsUrl, auth)) as { events: { devices: { targeted: number; acknowledged: number; pending: unknown[] } }[] };
  if (receipts.events.length !== 3) throw new Error(`the measured emergency has ${receipts.events.length} events, expected 3`);
  for (const e of receipts.events) {
    if (e.devices.targeted !== DEVICES || e.devices.acknowledged !== DEVICES || e.devices.pending.length !== 0) {
      throw new Error(`receipts before the load: ${JSON.stringify(e.devices).slice(0, 200)}`);
    }
  }
  const detail = (await getJson(`${receiptsUrl}?detail=devices`, auth)) as { events: { devices: { acknowledgedBy: { acknowledgedAt: string | null }[] } }[] };
  // Each event lists its first devices (at most 10); every one listed has acknowledged it, with a time.
  const listed = detail.events.flatMap((e) => e.devices.acknowledgedBy);
  const timed = listed.filter((d) => d.acknowledgedAt !== null).length;
  if (timed !== 3 * Math.min(DEVICES, 10)) throw new Error(`?detail=devices gave ${timed} acknowledgement times, expected ${3 * Math.min(DEVICES, 10)}`);
  const page = (await getJson(pageUrl, auth)) as { items: { offset: number }[] };
  if (page.items.length !== PAGE || page.items[0]!.offset !== after + 1) throw new Error(`the page after ${after} has ${page.items.length} items`);

  // The bare baseline, in its own process, measured right before the service.
  const baselinePort = await freePort();
  const baselineUrl = `http://127.0.0.1:${baselinePort}`;
  const baseline = await startProcess(
    ['--import', 'tsx', join(ROOT, 'bench/baselines/fastify-sqlite.ts')],
    { PORT: String(baselinePort), BASELINE_DB: join(db.dir, 'baseline.db') },
    `${baselineUrl}/health`,
  );
  results.push(await load('baseline: fastify JSON echo', { url: `${baselineUrl}/echo` }, baseline));
  await stopProcess(baseline);

  results.push(await load('service: GET receipts', { url: receiptsUrl, headers: auth }, service));
  results.push(await load(`service: GET events limit ${PAGE}`, { url: pageUrl, headers: auth }, service));
  results.push(
    await load(
      `service: GET receipts detail=devices, ${DETAIL_CONNECTIONS} connections`,
      { url: `${receiptsUrl}?detail=devices`, headers: auth, connections: DETAIL_CONNECTIONS },
      service,
    ),
  );

  const ratios: [string, string, string][] = [
    ['GET receipts / baseline echo', 'service: GET receipts', 'baseline: fastify JSON echo'],
    [`GET events limit ${PAGE} / baseline echo`, `service: GET events limit ${PAGE}`, 'baseline: fastify JSON echo'],
    ['GET receipts detail=devices / baseline echo', `service: GET receipts detail=devices, ${DETAIL_CONNECTIONS} connections`, 'baseline: fastify JSON echo'],
  ];
  console.log(
    `database: ${db.dialect === 'postgres' ? 'postgresql' : 'sqlite'}, ${CONNECTIONS} connections, ${DURATION} s each; ${DEVICES} connected devices, ${EVENTS} events, receipts of an emergency with 3 events, events page after offset ${after}`,
  );
  printTable(results, ratios);
  report = {
    database: db.dialect,
    connections: CONNECTIONS,
    durationSeconds: DURATION,
    devices: DEVICES,
    events: EVENTS,
    emergencies: flows.length,
    emergencyEvents: 3,
    pageLimit: PAGE,
    pageAfter: after,
    detailConnections: DETAIL_CONNECTIONS,
    setupSeconds: { provision: provisionSeconds, connect: connectSeconds, eventsReceived: eventsSeconds, acksRecorded: ackSeconds },
    /** Devices whose acks the server received but did not record, so that they had to ack again (see allAcknowledged). */
    devicesWithUnrecordedAcks: unrecordedAcks,
    results,
    ratios: ratiosOf(results, ratios),
    cpuRatios: cpuRatiosOf(results, ratios),
  };
} finally {
  closing = true;
  for (const device of devices) device.ws.terminate();
  if (service) await stopProcess(service);
  await db.drop();
}
writeBenchJson(report);

interface DeviceClient {
  ws: WebSocket;
  /** Highest event offset received. */
  received: number;
}

/** Opens one `ws` client per token, 100 handshakes at a time; each acknowledges every event frame as it arrives. */
async function connectDevices(url: string, tokens: string[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 100 }, async () => {
      while (next < tokens.length) {
        const token = tokens[next++]!;
        const device = await new Promise<DeviceClient>((resolve, reject) => {
          const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false });
          ws.once('open', () => resolve({ ws, received: 0 }));
          ws.once('error', reject);
        });
        device.ws.on('message', (data) => {
          const frame = JSON.parse(data.toString()) as { type: string; offset?: number };
          if (frame.type === 'event') {
            device.received = frame.offset!;
            device.ws.send(`{"type":"ack","offset":${frame.offset}}`);
          } else if (frame.type === 'ping') device.ws.send('{"type":"pong"}');
        });
        // A device dropped by the server (too slow, silent) would leave the receipts short: stop here.
        device.ws.on('close', (code) => {
          if (!closing) {
            console.error(`a device socket closed during the benchmark (code ${code})`);
            process.exitCode = 1;
          }
        });
        devices.push(device);
      }
    }),
  );
}

/** Resolves once every device has received the event at `offset`. */
async function allReceived(offset: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const behind = devices.filter((d) => d.received < offset).length;
    if (behind === 0) return;
    if (Date.now() > deadline) throw new Error(`${behind} devices did not receive offset ${offset}`);
    await sleep(100);
  }
}

/**
 * Polls GET /orgs/{org_id}/devices until every device shows lag 0 (its acks flushed to the database). A device
 * that has acknowledged everything sends nothing more, so acks the server received but did not record (a
 * failed ack flush drops its batch) would keep it behind for good: after `resendAfterMs` without progress to
 * lag 0, every device repeats its last ack, as firmware acking its position on a timer would. Returns how many
 * devices were still behind at the first repeat (0 when every ack was recorded the first time).
 */
async function allAcknowledged(api: string, auth: Record<string, string>, timeoutMs: number, resendAfterMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let resendAt = Date.now() + resendAfterMs;
  let unrecorded = 0;
  for (;;) {
    let caughtUp = 0;
    let cursor: string | null = null;
    do {
      const page = (await getJson(`${api}/devices?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, auth)) as {
        items: { lag: number }[];
        nextCursor: string | null;
      };
      caughtUp += page.items.filter((d) => d.lag === 0).length;
      cursor = page.nextCursor;
    } while (cursor);
    if (caughtUp === DEVICES) return unrecorded;
    if (Date.now() > deadline) {
      throw new Error(`${DEVICES - caughtUp} devices still show a lag ${timeoutMs / 1000} s after receiving and acknowledging the last event`);
    }
    if (Date.now() >= resendAt) {
      if (unrecorded === 0) {
        unrecorded = DEVICES - caughtUp;
        console.log(
          `${unrecorded} devices still show a lag ${resendAfterMs / 1000} s after acknowledging the last event: the server did not record their acks (its log has "ack flush" errors); every device acks again`,
        );
      }
      for (const device of devices) device.ws.send(`{"type":"ack","offset":${device.received}}`);
      resendAt = Date.now() + resendAfterMs;
    }
    await sleep(250);
  }
}

/** Events per emergency (3: declared, categorized, resolved; 2: declared, categorized; 1: declared), `total` in all. */
function flowSizes(total: number): number[] {
  const sizes: number[] = [];
  for (let left = total; left > 0; ) {
    const size = Math.min(left, sizes.length % 2 === 0 ? 3 : 2);
    sizes.push(size);
    left -= size;
  }
  return sizes;
}

/** Declares an emergency (Uncategorized), then re-categorizes it and resolves it as `events` says; returns its id. */
async function runFlow(api: string, auth: Record<string, string>, i: number, events: number): Promise<string> {
  const json = { ...auth, 'content-type': 'application/json' };
  const declared = (await send('POST', `${api}/emergencies`, json, {
    description: `Alarm ${i}`,
    source: 'bench',
    location: { latitude: 48.85, longitude: 2.35, floorId: `F${i % 9}` },
  })) as { emergencyId: string };
  const url = `${api}/emergencies/${declared.emergencyId}`;
  if (events >= 2) await send('PATCH', url, json, { categoryName: i % 2 ? 'Medical' : 'Fire' });
  if (events >= 3) await send('POST', `${url}/resolutions`, json, { resolutionNote: 'bench' });
  return declared.emergencyId;
}

async function send(method: string, url: string, headers: Record<string, string>, body: unknown): Promise<unknown> {
  const res = await fetch(url, { method, headers, body: JSON.stringify(body) });
  if (res.status !== 200 && res.status !== 201) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function getJson(url: string, headers: Record<string, string>): Promise<unknown> {
  const res = await fetch(url, { headers });
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}
