// Resident memory of the service (`emergency-api serve`, a child process) while it takes message posts of
// 53 MiB (five inline PNGs of about 7.9 MiB each, base64 in the JSON body): one post alone (the baseline,
// same run), then eight at once. Reports the peak RSS of each, the ratio, the answers (201, or 503 beyond
// MAX_CONCURRENT_LARGE_BODIES) and the RSS 10 s after the burst.
// Goal: eight at once peak under 600 MB and are back under 200 MB within 10 s.
// Usage: node --import tsx bench/large-messages.ts   (DATABASE_URL=postgres://... for PostgreSQL; BENCH_JSON=path)
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, cli, startProcess, stopProcess } from './lib/harness.js';
import { benchDatabase, freePort, rssBytes, writeBenchJson, benchServerEnv } from './lib/support.js';

const MB = 1024 * 1024;
const ATTACHMENT_BYTES = Math.floor(7.9 * MB);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 8);
const ONLY_ONE = process.env.BENCH_ONLY_ONE === '1';
const AFTER_MS = 10_000;

/** A PNG the service accepts (signature, header chunk, one data chunk), its data random so no two posts deduplicate. */
function pngOf(size: number): Buffer {
  const header = Buffer.from('89504e470d0a1a0a0000000d49484452000004000000030008060000002a3f9d1b', 'hex');
  const dataLength = size - header.length - 12;
  const chunkHead = Buffer.alloc(8);
  chunkHead.writeUInt32BE(dataLength, 0);
  chunkHead.write('IDAT', 4, 'latin1');
  return Buffer.concat([header, chunkHead, randomBytes(dataLength), Buffer.alloc(4)]);
}

function messageBody(): Buffer {
  const attachments = Array.from({ length: 5 }, (_, i) => ({
    src: `data:image/png;base64,${pngOf(ATTACHMENT_BYTES).toString('base64')}`,
    caption: `frame ${i}`,
  }));
  return Buffer.from(JSON.stringify({ content: 'camera frames', author: { type: 'agent', name: 'bench' }, attachments }));
}

function post(url: URL, key: string, body: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      url,
      { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': body.length } },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          if (text.length < 300) text += chunk.toString();
        });
        res.on('end', () => {
          if (res.statusCode !== 201 && res.statusCode !== 503) console.error(`answer ${res.statusCode}: ${text.slice(0, 300)}`);
          resolve(res.statusCode ?? 0);
        });
      },
    );
    // A refused post is answered before its body is read, and the server then closes the connection.
    req.on('error', () => resolve(-1));
    req.end(body);
  });
}

interface Burst {
  posts: number;
  bodyMiB: number;
  peakMB: number;
  afterMB: number;
  statuses: Record<string, number>;
  seconds: number;
}

async function burst(pid: number, url: URL, key: string, count: number): Promise<Burst> {
  const bodies = Array.from({ length: count }, messageBody);
  let peak = rssBytes(pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssBytes(pid));
  }, 50);
  const started = Date.now();
  const answers = await Promise.all(bodies.map((b) => post(url, key, b)));
  const seconds = (Date.now() - started) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, rssBytes(pid));
  await sleep(AFTER_MS);
  const statuses: Record<string, number> = {};
  for (const s of answers) statuses[s] = (statuses[s] ?? 0) + 1;
  const round = (bytes: number) => Math.round((bytes / MB) * 10) / 10;
  return { posts: count, bodyMiB: Math.round((bodies[0]!.length / MB) * 10) / 10, peakMB: round(peak), afterMB: round(rssBytes(pid)), statuses, seconds };
}

const db = benchDatabase('large_messages');
const port = await freePort();
const env = benchServerEnv(db, port);
const demo = cli(['admin', 'demo'], env);
const service = await startProcess([BIN, 'serve'], env, `http://127.0.0.1:${port}/healthz`);
const emergency = (await (
  await fetch(`http://127.0.0.1:${port}/api/public/v1/orgs/${demo.orgId}/emergencies`, {
    method: 'POST',
    headers: { authorization: `Bearer ${demo.key}`, 'content-type': 'application/json' },
    body: '{"description":"large message bench"}',
  })
).json()) as { emergencyId: string };
const url = new URL(`http://127.0.0.1:${port}/api/public/v1/orgs/${demo.orgId}/emergencies/${emergency.emergencyId}/messages`);
await sleep(2000);
const idleMB = Math.round((rssBytes(service.pid!) / MB) * 10) / 10;
const one = await burst(service.pid!, url, demo.key, 1);
const many = ONLY_ONE ? one : await burst(service.pid!, url, demo.key, CONCURRENT);
await stopProcess(service);
await db.drop();

console.log(`database: ${db.dialect}; idle RSS ${idleMB} MB; each post ${one.bodyMiB} MiB`);
console.log(`${'posts at once'.padEnd(14)} ${'peak MB'.padStart(8)} ${'MB after 10 s'.padStart(14)} ${'seconds'.padStart(8)}  answers`);
for (const b of [one, many]) {
  console.log(
    `${String(b.posts).padEnd(14)} ${b.peakMB.toFixed(1).padStart(8)} ${b.afterMB.toFixed(1).padStart(14)} ${b.seconds.toFixed(1).padStart(8)}  ${JSON.stringify(b.statuses)}`,
  );
}
console.log(`ratio of peaks (${CONCURRENT} / 1): ${(many.peakMB / one.peakMB).toFixed(2)}x`);
console.log(`goal: peak < 600 MB (${many.peakMB < 600 ? 'met' : 'NOT met'}), back under 200 MB within 10 s (${many.afterMB < 200 ? 'met' : 'NOT met'})`);
writeBenchJson({ database: db.dialect, idleMB, bodyMiB: one.bodyMiB, one, many });
