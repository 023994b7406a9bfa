/**
 * Measuring devices for the push benchmark, spread over several reader processes
 * (bench/lib/device-reader.c, compiled on first use with the machine's C compiler).
 *
 * Each reader holds its share of the device sockets, does the WebSocket handshake itself and reads the
 * server's frames straight off the socket, as base-station firmware would. For every frame it records
 *   - `arrived`: the kernel's receive timestamp of the frame's last bytes (SO_TIMESTAMPNS), when the frame
 *     reached the device's socket;
 *   - `read`: when the reader process read it.
 * A real base station reads only its own socket, so its `read` follows `arrived` at once. Here a thousand
 * devices share the server's two cores: one reader reads its sockets one after another, and the last
 * of them is read late by the time spent reading all the others (and by whatever the server is doing on
 * the same cores). `arrived` is free of that queue; `read` is not. Both are reported.
 *
 * With `ack`, every device answers each event frame with {"type":"ack","offset":N} as soon as it has read it,
 * as base stations do, so the server's ack path runs during the measurement. With `pong`, every device answers
 * the server's WebSocket pings, as any WebSocket client library does: a device that never acknowledges then stays
 * connected past the server's silence timeout.
 *
 * Times are CLOCK_MONOTONIC milliseconds (`monotonicMs`), the same clock in every process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { compiledTool } from './c-tools.js';

export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

type Target =
  | { kind: 'device'; wsUrl: string; tokens: string[] }
  | { kind: 'tcp'; port: number; count: number; bytes: number }
  /** MQTT 3.1.1 sessions, each subscribed at QoS 0 to `topic`. */
  | { kind: 'mqtt'; port: number; count: number; topic: string }
  /** NATS connections, one per subject (the same subject repeated for core NATS; one inbox each for JetStream push consumers). */
  | { kind: 'nats'; port: number; subjects: string[] };

/** When each device (or socket) had one frame, in monotonic ms. */
export interface Arrivals {
  arrived: number[];
  read: number[];
}

class Reader {
  private readonly lineWaiters: ((line: string) => boolean)[] = [];

  constructor(
    readonly process: ChildProcess,
    onComplete: (offset: number) => void,
  ) {
    // A reader that exited (it does when a device socket closes under it) reports that on stderr;
    // later commands to it are dropped rather than crash the benchmark.
    process.stdin!.on('error', () => {});
    const lines = createInterface({ input: process.stdout! });
    lines.on('line', (line) => {
      if (line.startsWith('complete ')) return onComplete(Number(line.slice(9)));
      const waiter = this.lineWaiters[0];
      if (waiter?.(line)) this.lineWaiters.shift();
    });
  }

  send(command: string): void {
    this.process.stdin!.write(`${command}\n`);
  }

  /** Feeds the reader's answer lines to `take` until it returns true. */
  answer(take: (line: string) => boolean): Promise<void> {
    return new Promise((resolve) =>
      this.lineWaiters.push((line) => {
        if (!take(line)) return false;
        resolve();
        return true;
      }),
    );
  }
}

export class DeviceSwarm {
  private readonly waiters = new Map<number, { left: number; resolve: () => void }>();
  private readonly completed = new Map<number, number>();

  private constructor(private readonly readers: Reader[]) {}

  /** The reader processes' ids: their CPU time is the load generator's share of the machine. */
  get pids(): number[] {
    return this.readers.map((reader) => reader.process.pid!);
  }

  static start(processes: number, options: { ack?: boolean; pong?: boolean } = {}): DeviceSwarm {
    const binary = compiledTool('device-reader.c');
    const args = [...(options.ack ? ['--ack'] : []), ...(options.pong ? ['--pong'] : [])];
    let swarm: DeviceSwarm | undefined;
    const readers = Array.from(
      { length: processes },
      () => new Reader(spawn(binary, args, { stdio: ['pipe', 'pipe', 'inherit'] }), (offset) => swarm!.onComplete(offset)),
    );
    swarm = new DeviceSwarm(readers);
    return swarm;
  }

  private onComplete(offset: number): void {
    this.completed.set(offset, (this.completed.get(offset) ?? 0) + 1);
    const waiter = this.waiters.get(offset);
    if (waiter && --waiter.left === 0) {
      this.waiters.delete(offset);
      waiter.resolve();
    }
  }

  /** Device streams (`tokens`, dealt out over the readers), bare TCP sockets to `port`, or subscribers of a peer broker. */
  async connect(target: Target): Promise<void> {
    const n = this.readers.length;
    await Promise.all(
      this.readers.map((reader, i) => {
        if (target.kind === 'device') {
          const url = new URL(target.wsUrl);
          const path = `${url.pathname}${url.search}`;
          target.tokens.forEach((token, j) => {
            if (j % n === i) reader.send(`device ${url.hostname} ${url.port} ${path} ${token}`);
          });
        } else if (target.kind === 'nats') {
          target.subjects.forEach((subject, j) => {
            if (j % n === i) reader.send(`nats 127.0.0.1 ${target.port} ${subject}`);
          });
        } else if (target.kind === 'mqtt') {
          const count = Math.floor(target.count / n) + (i < target.count % n ? 1 : 0);
          for (let j = 0; j < count; j++) reader.send(`mqtt 127.0.0.1 ${target.port} ${target.topic}`);
        } else {
          const count = Math.floor(target.count / n) + (i < target.count % n ? 1 : 0);
          for (let j = 0; j < count; j++) reader.send(`tcp 127.0.0.1 ${target.port} ${target.bytes}`);
        }
        reader.send('sync');
        return reader.answer((line) => line.startsWith('connected '));
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

  /** Every frame recorded so far, by offset; the readers forget them. */
  async collect(): Promise<Map<number, Arrivals>> {
    const all = new Map<number, Arrivals>();
    for (const reader of this.readers) {
      reader.send('collect');
      await reader.answer((line) => {
        if (line === 'end') return true;
        const [, offset, arrivedNs, readNs] = line.split(' ');
        let entry = all.get(Number(offset));
        if (!entry) {
          entry = { arrived: [], read: [] };
          all.set(Number(offset), entry);
        }
        entry.arrived.push(Number(arrivedNs) / 1e6);
        entry.read.push(Number(readNs) / 1e6);
        return false;
      });
    }
    this.completed.clear();
    return all;
  }

  async close(): Promise<void> {
    await Promise.all(
      this.readers.map(
        (reader) =>
          new Promise<void>((resolve) => {
            if (reader.process.exitCode !== null || reader.process.signalCode !== null) return resolve();
            reader.process.once('exit', () => resolve());
            reader.send('close');
          }),
      ),
    );
  }
}
