import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AlertPathProbe, assertFairShare, figuresOf, startChildAbuser } from '../helpers/alert-path.js';
import { createOrgTree, mintKey, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The uploader of tenant A runs in a process of its own: the test shares its process with the server, and building and
 * writing hundreds of megabytes would otherwise be charged to the server's event loop. It posts `mode` bodies in four loops,
 * two per key, honours Retry-After (a second's pause after 429 or 503) and prints each answer's status on a line.
 */
const UPLOADER = `
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
const [port, path, keyA, keyB, mode] = process.argv.slice(-5);
const MB = 1000 * 1000;
function png(size) {
  const header = Buffer.from('89504e470d0a1a0a0000000d49484452000004000000030008060000002a3f9d1b', 'hex');
  const chunkHead = Buffer.alloc(8);
  chunkHead.writeUInt32BE(size - header.length - 12, 0);
  chunkHead.write('IDAT', 4, 'latin1');
  return Buffer.concat([header, chunkHead, randomBytes(size - header.length - 12), Buffer.alloc(4)]);
}
// Five inline images, about 56 MB of JSON; broken: the last one's base64 spoiled (422); oversized: 12 MB past 64 MiB, sent chunked (413).
function messageBody(broken) {
  const images = Array.from({ length: 5 }, () => 'data:image/png;base64,' + png(8.4 * MB).toString('base64'));
  if (broken) images[4] = images[4].slice(0, -8) + '!!!!!!!!';
  return Buffer.from(JSON.stringify({ content: 'large', attachments: images.map((src, i) => ({ src, caption: 'image ' + i })) }));
}
function send(key, body, chunked) {
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => { answer += chunk; if (answer.includes('\\r\\n\\r\\n')) socket.destroy(); });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Number(/^HTTP\\/1\\.1 (\\d{3})/.exec(answer)?.[1] ?? 0)));
    const length = chunked ? 'Transfer-Encoding: chunked' : 'Content-Length: ' + body.length;
    socket.write('POST ' + path + ' HTTP/1.1\\r\\nHost: test\\r\\nAuthorization: Bearer ' + key + '\\r\\nContent-Type: application/json\\r\\n' + length + '\\r\\n\\r\\n');
    if (chunked) socket.write(body.length.toString(16) + '\\r\\n');
    socket.write(body);
    if (chunked) socket.write('\\r\\n0\\r\\n\\r\\n');
  });
}
const accepted = mode === 'accepted' ? messageBody(false) : null;
const broken = mode === 'refused' ? messageBody(true) : null;
const oversized = mode === 'refused' ? Buffer.concat([messageBody(false), Buffer.alloc(12 * MB, 0x20)]) : null;
console.log('ready');
await Promise.all([keyA, keyA, keyB, keyB].map(async (key, loop) => {
  for (;;) {
    const chunked = mode === 'refused' && loop % 2 === 1;
    const status = await send(key, accepted ?? (chunked ? oversized : broken), chunked);
    console.log(status);
    if (status === 429 || status === 503) await new Promise((r) => setTimeout(r, 1000));
  }
}));
`;

/** Starts the uploader; resolves once its bodies are built and it starts sending. */
function startUploader(port: number, path: string, keys: string[], mode: 'accepted' | 'refused') {
  return startChildAbuser(UPLOADER, [String(port), path, keys[0]!, keys[1]!, mode], 'the uploader');
}

describe('fair share: a tenant posting four 56 MB message bodies at once', () => {
  let server: TestServer;
  let probe: AlertPathProbe;
  let orgId = '';
  let path = '';
  let port = 0;
  before(async () => {
    server = await startTestServer();
    probe = await AlertPathProbe.open(server);
    const org = await createOrgTree(server.ctx);
    orgId = org.orgId;
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const emergency = await fetch(`${server.base}/orgs/${org.orgId}/emergencies`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ categoryName: 'Fire', description: 'large bodies' }),
    });
    path = `/api/public/v1/orgs/${org.orgId}/emergencies/${((await emergency.json()) as { emergencyId: string }).emergencyId}/messages`;
    port = Number(new URL(server.url).port);
  });
  /** Two fresh keys of tenant A, each within its share of the worker threads (two heavy requests in flight). */
  const keysOfA = async () => [
    (await mintKey(server.ctx, { subjectType: 'org', subjectId: orgId })).key,
    (await mintKey(server.ctx, { subjectType: 'org', subjectId: orgId })).key,
  ];

  /** Measures tenant B round after round while the uploads go on, until `enough` of them were answered (25 s at most). */
  async function measureUntil(uploader: Awaited<ReturnType<typeof startUploader>>, enough: (statuses: number[]) => boolean) {
    const samples: number[] = [];
    const started = Date.now();
    try {
      await new Promise((r) => setTimeout(r, 1000));
      do samples.push(...(await probe.measure(20)).samples);
      while (!enough(uploader.statuses) && Date.now() - started < 25_000);
    } finally {
      await uploader.stop();
    }
    return figuresOf(samples);
  }

  after(async () => {
    await probe?.close();
    await server?.close();
  });

  it("accepted bodies: tenant B's declare → frame stays within its share", async () => {
    const keys = await keysOfA();
    const quiet = await probe.measure(30);
    const uploader = await startUploader(port, path, keys, 'accepted');
    const abused = await measureUntil(uploader, (statuses) => statuses.filter((s) => s === 201).length >= 2);
    const { statuses } = uploader;
    assert.ok(statuses.filter((s) => s === 201).length >= 2, `posts were accepted during the run: ${statuses.join(',')}`);
    assert.ok(!statuses.some((s) => s >= 500 && s !== 503), `no 5xx but 503: ${statuses.join(',')}`);
    assertFairShare(quiet, abused, 'four 56 MB message bodies');
  });

  it("refused bodies (bad base64 at the end, a chunked body past 64 MiB): tenant B's declare → frame stays within its share", async () => {
    const keys = await keysOfA();
    const quiet = await probe.measure(30);
    const uploader = await startUploader(port, path, keys, 'refused');
    const abused = await measureUntil(uploader, (statuses) => statuses.includes(422) && statuses.includes(413));
    const { statuses } = uploader;
    assert.ok(statuses.includes(422) && statuses.includes(413), `posts were refused during the run (422 and 413): ${statuses.join(',')}`);
    assert.ok(!statuses.some((s) => s >= 500 && s !== 503), `no 5xx but 503: ${statuses.join(',')}`);
    assertFairShare(quiet, abused, 'four refused 56 MB message bodies');
  });
});
