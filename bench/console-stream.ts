// The operator console's live channel under load: BENCH_CONSOLES (default 100) watchers of one org's event
// stream (GET /orgs/{org_id}/stream, Server-Sent Events read with fetch and the Authorization header, as the
// console reads it) and, in the same run, BENCH_DEVICES (default 100) base stations of the same org on the
// WebSocket gateway, while BENCH_DECLARES (default 200) declares arrive one after another. For each event and
// each watcher: declare sent → frame received, p50/p99/max, the console's figure beside the devices' (the
// same clients' process reads both, so both carry its delays alike).
// Usage: node --import tsx bench/console-stream.ts   (DATABASE_URL=postgres://... for PostgreSQL; BENCH_JSON=path)
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { BIN, cli, startProcess, stopProcess } from './lib/harness.js';
import { benchDatabase, freePort, writeBenchJson, benchServerEnv } from './lib/support.js';

const CONSOLES = Number(process.env.BENCH_CONSOLES ?? 100);
const DEVICES = Number(process.env.BENCH_DEVICES ?? 100);
const DECLARES = Number(process.env.BENCH_DECLARES ?? 200);

const db = benchDatabase('console_stream');
const port = await freePort();
// Every console stream here uses the demo key: allow it as many streams as there are consoles.
const env = benchServerEnv(db, port, { STREAMS_PER_KEY: String(Math.max(20, CONSOLES)) });
const demo = cli(['admin', 'demo'], env);
const service = await startProcess([BIN, 'serve'], env, `http://127.0.0.1:${port}/healthz`);
const base = `http://127.0.0.1:${port}`;
const api = `${base}/api/public/v1/orgs/${demo.orgId}`;

/** Arrival times (ms, this process's clock) per stream offset, per watcher. */
const consoleArrivals: Map<number, number>[] = [];
const deviceArrivals: Map<number, number>[] = [];
const controllers: AbortController[] = [];

async function watch(): Promise<void> {
  const arrivals = new Map<number, number>();
  consoleArrivals.push(arrivals);
  const controller = new AbortController();
  controllers.push(controller);
  const res = await fetch(`${api}/stream`, { headers: { authorization: `Bearer ${demo.key}` }, signal: controller.signal });
  if (res.status !== 200) throw new Error(`stream answered ${res.status}`);
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const now = performance.now();
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const id = /^id: (\d+)$/m.exec(buffer.slice(0, end));
          if (id) arrivals.set(Number(id[1]), now);
          buffer = buffer.slice(end + 2);
        }
      }
    } catch {
      /* aborted at the end */
    }
  })();
}

const sockets: WebSocket[] = [];
async function connectDevice(token: string): Promise<void> {
  const arrivals = new Map<number, number>();
  deviceArrivals.push(arrivals);
  const ws = new WebSocket(`ws://127.0.0.1:${port}/devices/v1/stream`, { headers: { authorization: `Bearer ${token}` } });
  sockets.push(ws);
  ws.on('message', (data) => {
    const now = performance.now();
    const frame = JSON.parse(data.toString());
    if (frame.type === 'event') arrivals.set(frame.offset, now);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
}

const devices = cli(['admin', 'device', 'create', '--org', demo.orgId, '--name', 'bench station 0'], env);
const tokens = [devices.token as string];
// Registered in one admin request: the fleet endpoint, not one CLI process per device.
const fleet = await fetch(`${base}/api/admin/v1/orgs/${demo.orgId}/devices`, {
  method: 'POST',
  headers: { authorization: `Bearer ${demo.adminKey}`, 'content-type': 'application/json' },
  body: JSON.stringify({ devices: Array.from({ length: DEVICES - 1 }, (_, i) => ({ name: `bench station ${i + 1}` })) }),
});
for (const d of ((await fleet.json()) as { items: { token: string }[] }).items) tokens.push(d.token);
for (let i = 0; i < CONSOLES; i++) await watch();
for (const token of tokens) await connectDevice(token);
await sleep(1000);

const sentAt = new Map<number, number>();
for (let i = 0; i < DECLARES; i++) {
  const t0 = performance.now();
  const res = await fetch(`${api}/emergencies`, {
    method: 'POST',
    headers: { authorization: `Bearer ${demo.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ description: `console bench ${i}` }),
  });
  if (res.status !== 201) throw new Error(`declare answered ${res.status}`);
  await res.arrayBuffer();
  // The demo org's first events are this run's: offset i + 1.
  sentAt.set(i + 1, t0);
  await sleep(5);
}
await sleep(2000);

function summary(arrivals: Map<number, number>[]) {
  const delays: number[] = [];
  let missing = 0;
  for (const [offset, t0] of sentAt) {
    for (const a of arrivals) {
      const t = a.get(offset);
      if (t === undefined) missing++;
      else delays.push(t - t0);
    }
  }
  delays.sort((x, y) => x - y);
  const at = (q: number) => Math.round((delays[Math.min(delays.length - 1, Math.floor(q * delays.length))] ?? Number.NaN) * 100) / 100;
  return { frames: delays.length, missing, p50: at(0.5), p99: at(0.99), max: at(1) };
}

const consoles = summary(consoleArrivals);
const devicesSummary = summary(deviceArrivals);
for (const c of controllers) c.abort();
for (const ws of sockets) ws.terminate();
await stopProcess(service);
await db.drop();

console.log(`database: ${db.dialect}; ${CONSOLES} console streams and ${DEVICES} devices of one org; ${DECLARES} declares, one after another`);
console.log(
  `${'watchers'.padEnd(32)} ${'frames'.padStart(7)} ${'missing'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'max ms'.padStart(8)}`,
);
for (const [name, s] of [
  ['console streams (SSE)', consoles],
  ['base stations (WebSocket)', devicesSummary],
] as const) {
  console.log(
    `${name.padEnd(32)} ${String(s.frames).padStart(7)} ${String(s.missing).padStart(8)} ${String(s.p50).padStart(8)} ${String(s.p99).padStart(8)} ${String(s.max).padStart(8)}`,
  );
}
console.log(`console p99 / device p99: ${(consoles.p99 / devicesSummary.p99).toFixed(2)}x`);
writeBenchJson({ database: db.dialect, consoles: CONSOLES, devices: DEVICES, declares: DECLARES, console: consoles, device: devicesSummary });
