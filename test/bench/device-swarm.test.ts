/**
 * The device benchmark's measuring tools (bench/lib/device-reader.c through DeviceSwarm, and
 * bench/lib/fan-out-floor.c): the figures in the README rest on them, so they are checked against a real
 * WebSocket server here.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import { compiledTool } from '../../bench/lib/c-tools.js';
import { DeviceSwarm, monotonicMs } from '../../bench/lib/device-swarm.js';

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
});
