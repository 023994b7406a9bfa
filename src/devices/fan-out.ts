import { writeSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { writableDescriptor } from './socket-descriptor.js';

/**
 * Writes one live frame to many device sockets from this thread and one helper thread at once: the
 * kernel's send path dominates each write, so a second core halves the time to the last device.
 * `write()` is synchronous, so frames never interleave: only sockets with nothing queued in Node are
 * written directly, and whatever the kernel did not take goes through `socket.write()`, which queues
 * it and reports errors the usual way.
 */
export interface FanOutOptions {
  /** Helper threads (0: this thread only). */
  threads: number;
  /** Fewer direct-write sockets than this are written on this thread alone: waking the helper costs more. */
  minParallel: number;
}

/** Sockets taken from the shared counter at a time. */
const CHUNK = 8;

// Control words (Int32Array over a SharedArrayBuffer).
const JOB = 0; // job number, bumped by the main thread for each job (the helper waits on it)
const STATE = 1; // 2*job: posted; 2*job+1: taken by the helper; -1: called off by the main thread
const NEXT = 2; // next socket index to take
const COUNT = 3; // sockets in the job
const LENGTH = 4; // frame bytes
const DONE = 5; // last job the helper finished
const GENERATION = 6; // buffers generation: the helper fetches new buffers when it changed
const STOP = 7;
const HELPER_SOCKETS = 8; // sockets the helper has written to, in all
const CONTROL_WORDS = 9;

/**
 * The helper: waits for a job, takes chunks of sockets from the counter, writes the frame to each with
 * write(2) (through fs.writeSync) and records the bytes written (or -1 on an error) per socket.
 */
const HELPER_SOURCE = `
const { workerData, receiveMessageOnPort } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const { control, port } = workerData;
let generation = 0, fds, results, frame;
let job = Atomics.load(control, ${JOB});
for (;;) {
  Atomics.wait(control, ${JOB}, job, 1000);
  if (Atomics.load(control, ${STOP}) === 1) break;
  const now = Atomics.load(control, ${JOB});
  if (now === job) continue;
  job = now;
  if (Atomics.compareExchange(control, ${STATE}, 2 * job, 2 * job + 1) !== 2 * job) continue;
  if (Atomics.load(control, ${GENERATION}) !== generation) {
    let m;
    while ((m = receiveMessageOnPort(port))) ({ generation, fds, results, frame } = m.message);
  }
  const count = Atomics.load(control, ${COUNT});
  const length = Atomics.load(control, ${LENGTH});
  for (;;) {
    const start = Atomics.add(control, ${NEXT}, ${CHUNK});
    if (start >= count) break;
    const end = Math.min(count, start + ${CHUNK});
    for (let i = start; i < end; i++) {
      try { results[i] = writeSync(fds[i], frame, 0, length); } catch { results[i] = -1; }
    }
    Atomics.add(control, ${HELPER_SOCKETS}, end - start);
  }
  Atomics.store(control, ${DONE}, job);
  Atomics.notify(control, ${DONE});
}
`;

interface Helper {
  worker: Worker;
  port: MessagePort;
}

export class SocketFanOut {
  private readonly control = new Int32Array(new SharedArrayBuffer(CONTROL_WORDS * 4));
  private helper: Helper | null = null;
  private helperFailed = false;
  private generation = 0;
  private capacity = 0;
  private frameCapacity = 0;
  private fds = new Int32Array(new SharedArrayBuffer(0));
  private results = new Int32Array(new SharedArrayBuffer(0));
  private frame = Buffer.from(new SharedArrayBuffer(0));
  private job = 0;
  private stopped = false;
  // Reused between calls: sockets written directly and their descriptors, in the same order.
  private direct: Duplex[] = [];
  private directFds: number[] = [];

  constructor(private readonly options: FanOutOptions) {}

  /** Writes `wire` to every socket before returning (see the class comment). */
  write(sockets: Iterable<Duplex>, wire: Buffer): void {
    const direct = this.direct;
    const directFds = this.directFds;
    direct.length = 0;
    directFds.length = 0;
    for (const socket of sockets) {
      const fd = writableDescriptor(socket);
      if (fd < 0) {
        socket.write(wire);
        continue;
      }
      direct.push(socket);
      directFds.push(fd);
    }
    const count = direct.length;
    if (count === 0) return;
    const parallel = count >= this.options.minParallel && this.startHelper();
    if (!parallel) {
      for (let i = 0; i < count; i++) {
        const written = writeOrFail(directFds[i]!, wire, wire.length);
        if (written !== wire.length) direct[i]!.write(written > 0 ? wire.subarray(written) : wire);
      }
      direct.length = 0;
      return;
    }
    this.prepare(count, wire);
    const fds = this.fds;
    for (let i = 0; i < count; i++) fds[i] = directFds[i]!;
    const control = this.control;
    const job = ++this.job;
    Atomics.store(control, NEXT, 0);
    Atomics.store(control, COUNT, count);
    Atomics.store(control, LENGTH, wire.length);
    Atomics.store(control, STATE, 2 * job);
    Atomics.store(control, JOB, job);
    Atomics.notify(control, JOB);
    const results = this.results;
    const frame = this.frame;
    const length = wire.length;
    for (;;) {
      const start = Atomics.add(control, NEXT, CHUNK);
      if (start >= count) break;
      const end = Math.min(count, start + CHUNK);
      for (let i = start; i < end; i++) results[i] = writeOrFail(fds[i]!, frame, length);
    }
    // Call the helper off if it has not taken the job yet; otherwise wait for the chunk it holds, asleep:
    // on a machine whose cores are all busy, a thread polling here would keep the helper from its core.
    if (Atomics.compareExchange(control, STATE, 2 * job, -1) !== 2 * job) {
      while (Atomics.load(control, DONE) !== job) Atomics.wait(control, DONE, Atomics.load(control, DONE), 1000);
    }
    for (let i = 0; i < count; i++) {
      const written = results[i]!;
      // Partly written, not at all (a full buffer), or failed: the rest goes through the stream, which
      // queues it, or reports the error and closes the socket.
      if (written !== length) direct[i]!.write(written > 0 ? wire.subarray(written) : wire);
    }
    direct.length = 0;
  }

  /** Sockets the helper thread has written to so far. */
  get helperSockets(): number {
    return Atomics.load(this.control, HELPER_SOCKETS);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const helper = this.helper;
    this.helper = null;
    if (!helper) return;
    Atomics.store(this.control, STOP, 1);
    Atomics.add(this.control, JOB, 1);
    Atomics.notify(this.control, JOB);
    helper.port.close();
    await helper.worker.terminate();
  }

  private startHelper(): boolean {
    if (this.helper) return true;
    if (this.options.threads < 1 || this.helperFailed || this.stopped) return false;
    try {
      const { port1, port2 } = new MessageChannel();
      const worker = new Worker(HELPER_SOURCE, {
        eval: true,
        workerData: { control: this.control, port: port2 },
        transferList: [port2],
        // It runs no application code: keep its heap small.
        resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
        stdout: false,
        stderr: false,
      });
      worker.unref();
      worker.on('error', () => {
        // Without the helper every frame is written on this thread, as before it started.
        this.helperFailed = true;
        this.helper = null;
      });
      this.helper = { worker, port: port1 };
      this.capacity = 0;
      return true;
    } catch {
      this.helperFailed = true;
      return false;
    }
  }

  /** Buffers shared with the helper, large enough for `count` sockets and this frame. */
  private prepare(count: number, wire: Buffer): void {
    let changed = false;
    if (count > this.capacity) {
      this.capacity = Math.max(1024, 2 ** Math.ceil(Math.log2(count)));
      this.fds = new Int32Array(new SharedArrayBuffer(this.capacity * 4));
      this.results = new Int32Array(new SharedArrayBuffer(this.capacity * 4));
      changed = true;
    }
    if (wire.length > this.frameCapacity) {
      this.frameCapacity = Math.max(4096, 2 ** Math.ceil(Math.log2(wire.length)));
      this.frame = Buffer.from(new SharedArrayBuffer(this.frameCapacity));
      changed = true;
    }
    wire.copy(this.frame);
    if (changed) {
      this.generation++;
      this.helper!.port.postMessage({
        generation: this.generation,
        fds: this.fds,
        results: this.results,
        frame: this.frame,
      });
      Atomics.store(this.control, GENERATION, this.generation);
    }
  }
}

function writeOrFail(fd: number, frame: Buffer, length: number): number {
  try {
    return writeSync(fd, frame, 0, length);
  } catch {
    return -1;
  }
}
