import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createOrgTree, mintKey, startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/http.js';

/** A PNG the service accepts: signature, header chunk, then one data chunk of random bytes. */
function png(size: number): Buffer {
  const header = Buffer.from('89504e470d0a1a0a0000000d49484452000004000000030008060000002a3f9d1b', 'hex');
  const dataLength = size - header.length - 12;
  const chunkHead = Buffer.alloc(8);
  chunkHead.writeUInt32BE(dataLength, 0);
  chunkHead.write('IDAT', 4, 'latin1');
  return Buffer.concat([header, chunkHead, randomBytes(dataLength), Buffer.alloc(4)]);
}

/** Sends the request line and headers (and maybe the start of a body) on a raw socket; resolves with the first response bytes. */
function openUpload(port: number, path: string, key: string, length: number, start = ''): { socket: Socket; answer: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  socket.setEncoding('latin1');
  const answer = new Promise<string>((resolve) => {
    let text = '';
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\r\n\r\n') && /\}\s*$/.test(text)) resolve(text);
    });
    socket.on('close', () => resolve(text));
    socket.on('error', () => resolve(text));
  });
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${start}`,
  );
  return { socket, answer };
}

describe('large message bodies are bounded', () => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let key = '';
  let path = '';

  before(async () => {
    server = await startTestServer({ MAX_CONCURRENT_LARGE_BODIES: '1' });
    const org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    api = client(server.base, key);
    const emergency = (await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'large bodies' })).body.emergencyId;
    path = `/orgs/${org.orgId}/emergencies/${emergency}/messages`;
  });
  after(() => server.close());

  it('a large post beyond the bound is a 503 with Retry-After before its body is read; small posts go on; the slot comes back', async () => {
    const port = Number(new URL(server.url).port);
    const fullPath = `/api/public/v1${path}`;
    // One large upload in progress holds the only slot: headers and the first megabyte of 20 MiB sent.
    const slow = openUpload(port, fullPath, key, 20 * 1024 * 1024, `{"content":"slow","attachments":[{"src":"data:image/png;base64,${'A'.repeat(1024 * 1024)}`);
    await new Promise((r) => setTimeout(r, 300));

    const refused = openUpload(port, fullPath, key, 2 * 1024 * 1024);
    const answer = await refused.answer;
    refused.socket.destroy();
    assert.match(answer, /^HTTP\/1\.1 503 /);
    assert.match(answer, /\r\nretry-after: 1\r\n/i);
    assert.equal(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).detail.error, 'unavailable');

    const small = await api.post(path, { content: 'a small post is not held up' });
    assert.equal(small.status, 201);

    // The slow client goes away: its slot is released, and a large post is accepted again, twice.
    slow.socket.destroy();
    await new Promise((r) => setTimeout(r, 200));
    for (let round = 0; round < 2; round++) {
      const images = [png(3 * 1024 * 1024), png(2 * 1024 * 1024 + 17)];
      const res = await api.post(path, {
        content: `large ${round}`,
        attachments: images.map((bytes, i) => ({ src: `data:image/png;base64,${bytes.toString('base64')}`, caption: `image ${i}` })),
      });
      assert.equal(res.status, 201, JSON.stringify(res.body).slice(0, 300));
      assert.deepEqual(
        res.body.attachments.map((a: { sizeBytes: number; mimeType: string }) => [a.sizeBytes, a.mimeType]),
        images.map((b) => [b.length, 'image/png']),
      );
    }
  });

  it('a body announced longer than the route limit is a 413 before it is read', async () => {
    const port = Number(new URL(server.url).port);
    const announced = openUpload(port, `/api/public/v1${path}`, key, 65 * 1024 * 1024);
    const answer = await announced.answer;
    announced.socket.destroy();
    assert.match(answer, /^HTTP\/1\.1 413 /);
  });
});
