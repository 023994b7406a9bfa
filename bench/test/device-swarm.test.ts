/**
 * The device benchmark's measuring tools (bench/lib/device-reader.c through DeviceSwarm, and
 * bench/lib/fan-out-floor.c): the figures in the README rest on them, so they are checked against a real
 * WebSocket server here.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { IncomingMessage } from 'node:http';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import { compiledTool } from '../lib/c-tools.js';
import { DeviceSwarm, monotonicMs } from '../lib/device-swarm.js';

const eventFrame = (offset: number, padding: number) => JSON.stringify({ type: 'event', offset, event: { data: 'x'.repeat(padding) } });

describe('benchmark device readers', () => {
  const swarms: DeviceSwarm[] = [];
  after(async () => {
    for (const swarm of swarms) await swarm.close();
  });

  it('time every event frame of every device, whatever its size or however it is split', async () => {
    const sockets: WebSocket[] = [];
    const tokens: string[] = [];
    const server = new WebSocketServer({
      port: 0,
      host: '127.0.0.1',
      verifyClient: (info: { req: IncomingMessage }) => tokens.includes(info.req.headers.authorization?.slice(7) ?? ''),
    });
    server.on('connection', (ws) => sockets.push(ws));
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    for (let i = 0; i < 6; i++) tokens.push(`enk_dev_test${i}`);

    const swarm = DeviceSwarm.start(2);
    swarms.push(swarm);
    await swarm.connect({ kind: 'device', wsUrl: `ws://127.0.0.1:${port}/devices/v1/stream?after=0`, tokens });
    assert.equal(sockets.length, 6);

    // 7-bit, 16-bit and 64-bit payload lengths (the last spans several reads); then one frame written in two pieces.
    const sentAt = new Map<number, number>();
    for (const [offset, padding] of [
      [1, 10],
      [2, 5_000],
      [3, 200_000],
    ] as const) {
      sentAt.set(offset, monotonicMs());
      for (const ws of sockets) ws.send(eventFrame(offset, padding));
      await swarm.received(offset, 5_000);
    }
    sentAt.set(4, monotonicMs());
    const payload = Buffer.from(eventFrame(4, 50));
    const whole = Buffer.concat([Buffer.from([0x81, payload.length]), payload]);
    for (const ws of sockets) (ws as unknown as { _socket: { write(b: Buffer): void } })._socket.write(whole.subarray(0, 20));
    await new Promise((r) => setTimeout(r, 30));
    for (const ws of sockets) (ws as unknown as { _socket: { write(b: Buffer): void } })._socket.write(whole.subarray(20));
    await swarm.received(4, 5_000);
    // Not an event: ignored.
    for (const ws of sockets) ws.send(JSON.stringify({ type: 'ping' }));

    const arrivals = await swarm.collect();
    assert.deepEqual([...arrivals.keys()].sort(), [1, 2, 3, 4]);
    for (const [offset, { arrived, read }] of arrivals) {
      assert.equal(arrived.length, 6, `offset ${offset}: one arrival per device`);
      for (let i = 0; i < arrived.length; i++) {
        assert.ok(arrived[i]! >= sentAt.get(offset)!, `offset ${offset}: arrived after it was sent`);
        assert.ok(arrived[i]! <= read[i]! + 0.001, `offset ${offset}: arrived before it was read`);
      }
    }
    // The split frame is stamped when its last piece arrived, not its first.
    assert.ok(Math.min(...arrivals.get(4)!.arrived) >= sentAt.get(4)! + 25);
    await swarm.close();
    server.close();
  });

  it('answer the server’s WebSocket pings when started with `pong`, before acknowledging the frames that follow', async () => {
    // What each server-side socket received, in order, by the token it connected with.
    const heard = new Map<string, string[]>();
    const sockets: WebSocket[] = [];
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    server.on('connection', (ws, req) => {
      const log: string[] = [];
      heard.set(req.headers.authorization!.slice(7), log);
      ws.on('pong', (data) => log.push(`pong ${data.toString()}`));
      ws.on('message', (data) => log.push(data.toString()));
      sockets.push(ws);
    });
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    const wsUrl = `ws://127.0.0.1:${port}/devices/v1/stream`;
    const answering = DeviceSwarm.start(2, { ack: true, pong: true });
    const plain = DeviceSwarm.start(1, { ack: true });
    swarms.push(answering, plain);
    await answering.connect({ kind: 'device', wsUrl, tokens: ['enk_dev_pong0', 'enk_dev_pong1', 'enk_dev_pong2'] });
    await plain.connect({ kind: 'device', wsUrl, tokens: ['enk_dev_plain0'] });

    for (const ws of sockets) {
      ws.ping(Buffer.from('beat-1'));
      ws.send(eventFrame(7, 10));
    }
    // Every device's ack of offset 7 comes after anything it answered to the ping before it.
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if ([...heard.values()].every((log) => log.includes('{"type":"ack","offset":7}'))) {
          clearInterval(check);
          resolve();
        }
      }, 10);
    });
    const ack = '{"type":"ack","offset":7}';
    assert.deepEqual(Object.fromEntries(heard), {
      enk_dev_pong0: ['pong beat-1', ack],
      enk_dev_pong1: ['pong beat-1', ack],
      enk_dev_pong2: ['pong beat-1', ack],
      enk_dev_plain0: [ack],
    });
    await answering.close();
    await plain.close();
    server.close();
  });

  it("count the floor server's rounds on plain sockets", async () => {
    const floor = spawn(compiledTool('fan-out-floor.c'), ['2', '900'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: floor.stdout! })[Symbol.asyncIterator]();
    const port = Number(String((await lines.next()).value).split(' ')[1]);
    const swarm = DeviceSwarm.start(2);
    swarms.push(swarm);
    floor.stdin!.write('accept 10\n');
    await Promise.all([swarm.connect({ kind: 'tcp', port, count: 10, bytes: 900 }), lines.next()]);
    for (let round = 1; round <= 3; round++) {
      floor.stdin!.write('write\n');
      await swarm.received(round, 5_000);
    }
    const arrivals = await swarm.collect();
    assert.deepEqual([...arrivals.keys()].sort(), [1, 2, 3]);
    for (const { arrived } of arrivals.values()) assert.equal(arrived.length, 10);
    await swarm.close();
    floor.kill();
  });

  it('read MQTT 3.1.1 sessions: CONNECT and SUBSCRIBE at QoS 0, then PUBLISH packets of any length, split or not', async () => {
    const sessions: Socket[] = [];
    const subscribed: string[] = [];
    const server = createServer((socket) => {
      let buffer = Buffer.alloc(0);
      socket.on('data', (chunk) => {
        buffer = Buffer.concat([buffer, chunk]);
        // CONNECT (0x10) and SUBSCRIBE (0x82) of the reader fit a one-byte remaining length.
        while (buffer.length >= 2 && buffer.length >= 2 + buffer[1]!) {
          const type = buffer[0]!;
          const body = buffer.subarray(2, 2 + buffer[1]!);
          buffer = buffer.subarray(2 + buffer[1]!);
          if (type === 0x10) {
            assert.equal(body.subarray(2, 6).toString(), 'MQTT');
            assert.equal(body[6], 4, 'protocol level 4 (3.1.1)');
            socket.write(Buffer.from([0x20, 2, 0, 0]));
          } else if (type === 0x82) {
            const topicLength = body.readUInt16BE(2);
            subscribed.push(body.subarray(4, 4 + topicLength).toString());
            assert.equal(body[4 + topicLength], 0, 'QoS 0');
            socket.write(Buffer.from([0x90, 3, body[0]!, body[1]!, 0]));
            sessions.push(socket);
          }
        }
      });
    });
    server.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    const swarm = DeviceSwarm.start(2);
    swarms.push(swarm);
    await swarm.connect({ kind: 'mqtt', port, count: 4, topic: 'bench/devices/t' });
    assert.deepEqual(subscribed, Array(4).fill('bench/devices/t'));

    const publish = (offset: number, padding: number) => {
      const topic = Buffer.from('bench/devices/t');
      const payload = Buffer.from(eventFrame(offset, padding));
      let remaining = 2 + topic.length + payload.length;
      const length: number[] = [];
      do {
        const byte = remaining % 128;
        remaining = Math.floor(remaining / 128);
        length.push(remaining > 0 ? byte | 0x80 : byte);
      } while (remaining > 0);
      const topicLength = Buffer.alloc(2);
      topicLength.writeUInt16BE(topic.length);
      return Buffer.concat([Buffer.from([0x30, ...length]), topicLength, topic, payload]);
    };
    // One, two and three bytes of remaining length; then one packet written in two pieces, after another packet in the same write.
    for (const [offset, padding] of [
      [1, 10],
      [2, 900],
      [3, 100_000],
    ] as const) {
      for (const s of sessions) s.write(publish(offset, padding));
      await swarm.received(offset, 5_000);
    }
    const split = Buffer.concat([publish(4, 30), publish(5, 300)]);
    for (const s of sessions) s.write(split.subarray(0, split.length - 100));
    await new Promise((r) => setTimeout(r, 20));
    for (const s of sessions) s.write(split.subarray(split.length - 100));
    await swarm.received(5, 5_000);
    const arrivals = await swarm.collect();
    assert.deepEqual([...arrivals.keys()].sort(), [1, 2, 3, 4, 5]);
    for (const { arrived } of arrivals.values()) assert.equal(arrived.length, 4);
    await swarm.close();
    server.close();
  });

  it('read NATS subscriptions: MSG and HMSG, PING answered, JetStream flow control answered, heartbeats skipped', async () => {
    const connections: { socket: Socket; received: string }[] = [];
    const server = createServer((socket) => {
      const conn = { socket, received: '' };
      connections.push(conn);
      socket.write('INFO {"server_id":"test","headers":true,"max_payload":1048576}\r\n');
      socket.on('data', (chunk) => {
        conn.received += chunk.toString();
        if (conn.received.endsWith('PING\r\n') && !conn.received.includes('PONG')) socket.write('PONG\r\n');
      });
    });
    server.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    const swarm = DeviceSwarm.start(2);
    swarms.push(swarm);
    await swarm.connect({ kind: 'nats', port, subjects: ['inbox.a', 'inbox.b', 'inbox.c'] });
    assert.equal(connections.length, 3);
    for (const c of connections) assert.match(c.received, /^CONNECT \{[^\r]*"headers":true[^\r]*\}\r\nSUB inbox\.[abc] 1\r\nPING\r\n$/);

    const msg = (offset: number, padding: number, reply = '') => {
      const payload = eventFrame(offset, padding);
      return `MSG inbox.a 1 ${reply ? `${reply} ` : ''}${Buffer.byteLength(payload)}\r\n${payload}\r\n`;
    };
    const hmsg = (headers: string, payload: string, reply = '') =>
      `HMSG inbox.a 1 ${reply ? `${reply} ` : ''}${headers.length} ${headers.length + payload.length}\r\n${headers}${payload}\r\n`;
    for (const c of connections) {
      c.received = '';
      c.socket.write(msg(1, 10));
      // A JetStream delivery carries a reply subject; a flow-control request and an idle heartbeat carry status 100.
      c.socket.write(msg(2, 5_000, '$JS.ACK.S.C.1.2.2.1700000000.0'));
      c.socket.write(hmsg('NATS/1.0 100 FlowControl Request\r\n\r\n', '', '$JS.FC.S.C.xyz'));
      c.socket.write(hmsg('NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 2\r\n\r\n', ''));
      c.socket.write(hmsg('NATS/1.0\r\nNats-Msg-Id: x\r\n\r\n', eventFrame(3, 100)));
      c.socket.write('PING\r\n');
    }
    await swarm.received(3, 5_000);
    const split = msg(4, 200_000);
    for (const c of connections) c.socket.write(split.slice(0, 1000));
    await new Promise((r) => setTimeout(r, 20));
    for (const c of connections) c.socket.write(split.slice(1000));
    await swarm.received(4, 5_000);
    await new Promise((r) => setTimeout(r, 50));
    for (const c of connections) assert.equal(c.received, 'PUB $JS.FC.S.C.xyz 0\r\n\r\nPONG\r\n');
    const arrivals = await swarm.collect();
    assert.deepEqual([...arrivals.keys()].sort(), [1, 2, 3, 4]);
    for (const { arrived } of arrivals.values()) assert.equal(arrived.length, 3);
    await swarm.close();
    server.close();
  });
});
