import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { SocketFanOut } from '../../src/devices/fan-out.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { connectDevice, type DeviceTestServer, startDeviceServer } from './support.js';

/** `count` loopback connections: the server's sockets (written to) and the clients' (read). */
async function socketPairs(count: number): Promise<{ server: Server; written: Socket[]; read: Socket[] }> {
  const written: Socket[] = [];
  const server = createServer((s) => {
    s.setNoDelay(true);
    s.on('error', () => undefined);
    written.push(s);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const read: Socket[] = [];
  for (let i = 0; i < count; i++) {
    const c = connect(port, '127.0.0.1');
    c.on('error', () => undefined);
    await once(c, 'connect');
    read.push(c);
  }
  while (written.length < count) await new Promise((r) => setTimeout(r, 5));
  return { server, written, read };
}

/** Collects what a client socket receives until `bytes` have arrived. */
function receive(socket: Socket, bytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let got = 0;
  return new Promise((resolve, reject) => {
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      got += c.length;
      if (got >= bytes) resolve(Buffer.concat(chunks));
    });
    socket.once('error', reject);
  });
}

describe('SocketFanOut', () => {
  it('writes every frame whole and in order to every socket, from two threads, slow readers included', async () => {
    const { server, written, read } = await socketPairs(40);
    const fanOut = new SocketFanOut({ threads: 1, minParallel: 1 });
    try {
      // Frames of varied sizes; three of 3 MiB fill the kernel buffers of the readers that are paused
      // (more than a paused loopback connection holds), so their sockets take part of a frame or none
      // and queue the rest in Node.
      const frames: Buffer[] = [];
      for (let i = 0; i < 60; i++) {
        const size = i % 20 === 10 ? 3 * 1024 * 1024 : 50 + ((i * 7919) % 3000);
        frames.push(Buffer.alloc(size, i % 251));
      }
      // The helper thread starts on the first write; give it time to be ready for the frames that follow.
      const ready = Buffer.from('ready');
      fanOut.write(written, ready);
      await new Promise((r) => setTimeout(r, 300));
      frames.unshift(ready);
      const total = frames.reduce((n, f) => n + f.length, 0);
      const slow = new Set(read.filter((_, i) => i % 8 === 0));
      for (const s of slow) s.pause();
      const received = read.map((s) => receive(s, total));
      for (let i = 1; i < frames.length; i++) {
        fanOut.write(written, frames[i]!);
        if (i % 15 === 0) await new Promise((r) => setImmediate(r));
      }
      assert.ok(
        written.some((s) => s.writableLength > 0),
        'some sockets of paused readers had bytes queued in Node (the fallback path ran)',
      );
      assert.ok(fanOut.helperSockets > 0, 'the helper thread wrote to some sockets');
      for (const s of slow) s.resume();
      const expected = Buffer.concat(frames);
      for (const got of await Promise.all(received)) assert.ok(got.equals(expected), 'a reader got exactly the frames, in order');
    } finally {
      await fanOut.stop();
      for (const s of read) s.destroy();
      server.close();
    }
  });

  it('writes on the calling thread alone below the threshold, and without helper threads', async () => {
    const { server, written, read } = await socketPairs(20);
    const fanOuts = [new SocketFanOut({ threads: 0, minParallel: 1 }), new SocketFanOut({ threads: 1, minParallel: 1_000 })];
    try {
      const frame = Buffer.from('{"type":"event","offset":1}');
      const received = read.map((s) => receive(s, 2 * frame.length));
      for (const f of fanOuts) f.write(written, frame);
      for (const got of await Promise.all(received)) assert.equal(got.toString(), frame.toString().repeat(2));
    } finally {
      for (const f of fanOuts) await f.stop();
      for (const s of read) s.destroy();
      server.close();
    }
  });

  it('leaves a closed socket to the stream, which reports it', async () => {
    const { server, written, read } = await socketPairs(3);
    const fanOut = new SocketFanOut({ threads: 1, minParallel: 1 });
    try {
      written[1]!.destroy();
      const errors: unknown[] = [];
      for (const s of written) s.on('error', (e) => errors.push(e));
      const frame = Buffer.from('hello');
      const received = [read[0]!, read[2]!].map((s) => receive(s, frame.length));
      fanOut.write(written, frame);
      for (const got of await Promise.all(received)) assert.equal(got.toString(), 'hello');
    } finally {
      await fanOut.stop();
      for (const s of read) s.destroy();
      server.close();
    }
  });
});

describe('device gateway with the live frames written from two threads', () => {
  let server: DeviceTestServer;
  before(async () => {
    server = await startDeviceServer({ devices: { fanOutThreads: 1, parallelFanOutMin: 1 } });
  });
  after(() => server.close());

  it('delivers every event once and in order to every device of the org', async () => {
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const api = client(server.base, key);
    const devices = await Promise.all(
      Array.from({ length: 12 }, async (_, i) =>
        connectDevice(server.wsUrl, (await createDevice(server.ctx, operatorCaller(), org.orgId, { name: `station ${i}` })).token),
      ),
    );
    for (let i = 0; i < 25; i++) {
      const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { description: `drill ${i}` });
      assert.equal(declared.status, 201);
    }
    for (const d of devices) {
      await d.until(() => d.events.length >= 25, 5_000, '25 events');
      assert.deepEqual(
        d.offsets(),
        Array.from({ length: 25 }, (_, i) => i + 1),
      );
      assert.deepEqual(
        d.events.map((e) => e.event.data.emergency.description),
        Array.from({ length: 25 }, (_, i) => `drill ${i}`),
      );
    }
    await Promise.all(devices.map((d) => d.close()));
  });
});
