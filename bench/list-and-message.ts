// GET list of emergencies and POST message of the real service, next to bare baselines measured in the same run:
//   - GET list (limit 50, an org holding BENCH_LIST_SIZE emergencies) vs a bare Fastify JSON echo;
//   - POST message, text only and with a small inline PNG, vs a bare Fastify handler doing two
//     better-sqlite3 inserts of the same request body (the least a write can cost on this stack).
// Usage: node --import tsx bench/list-and-message.ts
//   (BENCH_DURATION=seconds, BENCH_CONNECTIONS=n, BENCH_LIST_SIZE=n; DATABASE_URL=postgres://... benches the
//   service on PostgreSQL in a throwaway schema; BENCH_JSON=path writes the raw results as JSON)
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { BIN, cli, CONNECTIONS, DURATION, load, printTable, ROOT, type Result, startProcess, stopProcess } from './lib/harness.js';
import { benchDatabase, freePort, numberedBodies, writeBenchJson, benchServerEnv } from './lib/support.js';

const LIST_SIZE = Number(process.env.BENCH_LIST_SIZE ?? 500);

const png = smallPng(32, 32);
// `{n}` becomes a per-request counter: every post is a new message (an identical inline-byte message would be
// answered from the dedupe window instead of being written), and the baseline gets the same bytes to store.
const textBody = JSON.stringify({ content: 'Smoke on floor 2, east stairwell {n}', author: { type: 'agent', name: 'Dispatch bot' } });
const pngBody = JSON.stringify({
  content: 'Door 2B {n}',
  author: { type: 'user' },
  attachments: [{ src: `data:image/png;base64,${png.toString('base64')}`, caption: 'east door' }],
});
const json = { 'content-type': 'application/json' };
const results: Result[] = [];

const baselineDb = benchDatabase('baseline');
const baselinePort = await freePort();
const baselineUrl = `http://127.0.0.1:${baselinePort}`;
const baseline = await startProcess(
  ['--import', 'tsx', join(ROOT, 'bench/baselines/fastify-sqlite.ts')],
  { PORT: String(baselinePort), BASELINE_DB: join(baselineDb.dir, 'baseline.db') },
  `${baselineUrl}/health`,
);
results.push(await load('baseline: fastify JSON echo', { url: `${baselineUrl}/echo` }));
results.push(await load('baseline: 2 inserts, text body', { url: `${baselineUrl}/insert`, method: 'POST', headers: json, ...numberedBodies(textBody) }));
results.push(await load('baseline: 2 inserts, PNG body', { url: `${baselineUrl}/insert`, method: 'POST', headers: json, ...numberedBodies(pngBody) }));
await stopProcess(baseline);
await baselineDb.drop();

const db = benchDatabase('list_message');
const port = await freePort();
const env = benchServerEnv(db, port);
const demo = cli(['admin', 'demo'], env);
const service = await startProcess([BIN, 'serve'], env, `http://127.0.0.1:${port}/healthz`);
const emergencies = `http://127.0.0.1:${port}/api/public/v1/orgs/${demo.orgId}/emergencies`;
const auth = { authorization: `Bearer ${demo.key}` };

// Populate the org, a few declares at a time, so the list reads a realistic page out of a larger table.
let made = 0;
let emergencyId = '';
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (made < LIST_SIZE) {
      made++;
      const res = await fetch(emergencies, {
        method: 'POST',
        headers: { ...auth, ...json },
        body: JSON.stringify({
          categoryName: 'Fire',
          description: `Alarm ${made}`,
          source: 'bench',
          location: { latitude: 48.85, longitude: 2.35, floorId: `F${made % 9}` },
          metadata: { zone: made % 17 },
        }),
      });
      if (res.status !== 201) throw new Error(`declare failed while populating: ${res.status} ${await res.text()}`);
      emergencyId = ((await res.json()) as { emergencyId: string }).emergencyId;
    }
  }),
);
const messages = `${emergencies}/${emergencyId}/messages`;

// One call of each before measuring, so a broken setup fails loudly instead of benchmarking errors.
const page = (await (await fetch(`${emergencies}?limit=50`, { headers: auth })).json()) as { items?: unknown[] };
if (page.items?.length !== Math.min(50, LIST_SIZE)) throw new Error(`list returned ${page.items?.length} items`);
for (const body of [textBody, pngBody]) {
  const res = await fetch(messages, { method: 'POST', headers: { ...auth, ...json }, body: body.replace('{n}', 'check') });
  if (res.status !== 201) throw new Error(`message post failed: ${res.status} ${await res.text()}`);
}

results.push(await load('service: GET list limit 50', { url: `${emergencies}?limit=50`, headers: auth }));
results.push(await load('service: POST message, text', { url: messages, method: 'POST', headers: { ...auth, ...json }, ...numberedBodies(textBody) }));
results.push(await load('service: POST message, PNG', { url: messages, method: 'POST', headers: { ...auth, ...json }, ...numberedBodies(pngBody) }));
await stopProcess(service);
await db.drop();

console.log(
  `database: ${db.dialect === 'postgres' ? 'postgresql' : 'sqlite'}, ${CONNECTIONS} connections, ${DURATION} s each, list over ${LIST_SIZE} emergencies, PNG ${png.length} bytes`,
);
printTable(results, [
  ['GET list limit 50 / baseline echo', 'service: GET list limit 50', 'baseline: fastify JSON echo'],
  ['POST message text / baseline two-insert', 'service: POST message, text', 'baseline: 2 inserts, text body'],
  ['POST message PNG / baseline two-insert', 'service: POST message, PNG', 'baseline: 2 inserts, PNG body'],
]);
writeBenchJson({ database: db.dialect, connections: CONNECTIONS, durationSeconds: DURATION, listSize: LIST_SIZE, pngBytes: png.length, results });

/** A valid w×h RGB PNG (a gradient, so it is not a trivially compressible blank). */
function smallPng(width: number, height: number): Buffer {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1);
    for (let x = 0; x < width; x++) raw.set([(x * 8) & 255, (y * 8) & 255, ((x ^ y) * 8) & 255], row + 1 + x * 3);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit depth, truecolour, deflate, no filter, no interlace
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
