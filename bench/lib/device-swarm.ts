/**
 * Measuring devices spread over several processes. A thousand devices read by one process are read one
 * after another, so the last of them reports the frame late by the time spent reading all the
 * others: an artefact of packing the devices onto one machine, where each real base station reads
 * only its own socket. Spread over `processes` readers, that queue is that many times shorter. The
 * bare TCP floor in bench/devices.ts is read by the same swarm, so both are measured alike.
 *
 * Times are CLOCK_MONOTONIC milliseconds (`monotonicMs`), the same clock in every process.
 *
 * This file is also the reader process itself (started with the `--swarm-reader` argument).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { connectRawDevice, connectReader } from './raw-device.js';

export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

type Target = { kind: 'device'; wsUrl: string; tokens: string[] } | { kind: 'tcp'; port: number; count: number; bytes: number };

type ToReader = { type: 'connect'; target: Target } | { type: 'collect' } | { type: 'close' };
type FromReader = { type: 'connected' } | { type: 'complete'; offset: number } | { type: 'samples'; samples: [number, number[]][] };

export class DeviceSwarm {
  private readonly waiters = new Map<number, { left: number; resolve: () => void }>();
  private readonly completed = new Map<number, number>();

  private constructor(private readonly readers: ChildProcess[]) {
    for (const reader of readers) {
      reader.on('message', (m: FromReader) => {
        if (m.type !== 'complete') return;
        this.completed.set(m.offset, (this.completed.get(m.offset) ?? 0) + 1);
        const waiter = this.waiters.get(m.offset);
        if (waiter && --waiter.left === 0) {
          this.waiters.delete(m.offset);
          waiter.resolve();
        }
      });
    }
  }

  static start(processes: number): DeviceSwarm {
    const file = fileURLToPath(import.meta.url);
    return new DeviceSwarm(
      Array.from({ length: processes }, () =>
        spawn(process.execPath, ['--import', 'tsx', file, '--swarm-reader'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
      ),
    );
  }

  /** Device streams (`tokens`, dealt out over the readers), or bare TCP sockets to `port`. */
  async connect(target: Target): Promise<void> {
    const n = this.readers.length;
    await Promise.all(
      this.readers.map((reader, i) => {
        const part: Target =
          target.kind === 'device'
            ? { ...target, tokens: target.tokens.filter((_, j) => j % n === i) }
            : { ...target, count: Math.floor(target.count / n) + (i < target.count % n ? 1 : 0) };
        return this.request(reader, { type: 'connect', target: part }, 'connected');
      }),
    );
  }

  /** Resolves once every device has the frame at `offset` (every socket its `offset`-th buffer), or at the deadline. */
  received(offset: number, timeoutMs: number): Promise<void> {
    const left = this.readers.length - (this.completed.get(offset) ?? 0);
    if (left <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(offset);
        resolve();
      }, timeoutMs);
      this.waiters.set(offset, {
        left,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /** Every arrival time recorded so far, by offset; the readers forget them. */
  async collect(): Promise<Map<number, number[]>> {
    const all = new Map<number, number[]>();
    for (const reader of this.readers) {
      const m = (await this.request(reader, { type: 'collect' }, 'samples')) as Extract<FromReader, { type: 'samples' }>;
      for (const [offset, times] of m.samples) all.set(offset, [...(all.get(offset) ?? []), ...times]);
    }
    this.completed.clear();
    return all;
  }

  async close(): Promise<void> {
    await Promise.all(
      this.readers.map(
        (reader) =>
          new Promise<void>((resolve) => {
            reader.once('exit', () => resolve());
            reader.send({ type: 'close' } satisfies ToReader);
          }),
      ),
    );
  }

  private request(reader: ChildProcess, message: ToReader, answer: FromReader['type']): Promise<FromReader> {
    return new Promise((resolve) => {
      const onMessage = (m: FromReader) => {
        if (m.type !== answer) return;
        reader.off('message', onMessage);
        resolve(m);
      };
      reader.on('message', onMessage);
      reader.send(message);
    });
  }
}

/** The reader process: connects what it is told to, records arrival times, reports complete offsets. */
function runReader(): void {
  const sockets: Socket[] = [];
  const arrivals = new Map<number, number[]>();
  const send = (m: FromReader) => process.send!(m);
  const arrived = (offset: number) => {
    const at = monotonicMs();
    let times = arrivals.get(offset);
    if (!times) arrivals.set(offset, (times = []));
    times.push(at);
    if (times.length === sockets.length) send({ type: 'complete', offset });
  };
  process.on('message', async (m: ToReader) => {
    if (m.type === 'close') {
      for (const socket of sockets) socket.destroy();
      process.exit(0);
    }
    if (m.type === 'collect') {
      send({ type: 'samples', samples: [...arrivals] });
      arrivals.clear();
      return;
    }
    const target = m.target;
    if (target.kind === 'device') {
      for (let i = 0; i < target.tokens.length; i += 100) {
        sockets.push(...(await Promise.all(target.tokens.slice(i, i + 100).map((token) => connectRawDevice(target.wsUrl, token, (offset) => arrived(offset))))));
      }
    } else {
      for (let i = 0; i < target.count; i++) {
        // A buffer may arrive in pieces; it counts once all of it is here. Rounds number from 1.
        let bytesIn = 0;
        let round = 1;
        const socket = connectReader(target.port, '127.0.0.1', (chunk) => {
          bytesIn += chunk.length;
          while (bytesIn >= target.bytes) {
            bytesIn -= target.bytes;
            arrived(round++);
          }
        });
        await new Promise((resolve) => socket.once('connect', resolve));
        sockets.push(socket);
      }
    }
    send({ type: 'connected' });
  });
}

if (process.argv.includes('--swarm-reader')) runReader();
