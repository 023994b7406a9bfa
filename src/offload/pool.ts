import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { AppError } from '../errors.js';
import { type OffloadOutcome, rebuiltError } from './outcome.js';

/** A function of some module that the pool runs on a worker thread: its input and output cross threads by structured clone. */
export interface OffloadTask<I, O> {
  module: string;
  name: string;
  /** Never set: carries the types. */
  readonly types?: (input: I) => O;
}

/**
 * Names `fn`, an export of the module at `moduleUrl` (its `import.meta.url`), as a task; the worker imports that module and
 * calls the export of the same name.
 */
export function offloadTask<I, O>(moduleUrl: string, fn: (input: I) => O | Promise<O>): OffloadTask<I, O> {
  return { module: moduleUrl, name: fn.name };
}

export interface OffloadSettings {
  OFFLOAD_THREADS: number;
  OFFLOAD_QUEUE: number;
  OFFLOAD_PER_KEY: number;
}

/** Refusals ask the client to come back this soon: a heavy job is short, so a slot frees up quickly. */
const RETRY_AFTER_SECONDS = 1;

/**
 * Worker threads yield the CPU to the main thread, whose event loop carries every tenant's alert path: heavy work of one
 * tenant then waits for the alert path rather than the other way round.
 */
const WORKER_NICE_INCREMENT = 19;

/**
 * The entry of each thread: compiled, the worker module beside this one; from the TypeScript sources (a development
 * checkout), the launcher's bootstrap that loads the tsx loader into the thread first.
 */
const WORKER_FILE =
  extname(fileURLToPath(import.meta.url)) === '.ts' ? new URL('../../bin/source-worker.js', import.meta.url) : new URL('./worker.js', import.meta.url);

/**
 * CPU-heavy work of requests (XML parsing and validation, documents rendered, large bodies decoded) runs on a pool of worker
 * threads so that no request holds the event loop. Each key has a few jobs in flight at most (beyond it 429 rate_limited),
 * and the jobs waiting for a thread are bounded for the whole process (beyond it 503 unavailable); both with Retry-After.
 * The threads start with the first job, so a command that never needs them never starts them.
 */
export class Offload {
  private pool: Piscina | undefined;
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly settings: OffloadSettings) {}

  /** Takes one of `key`'s slots now (429 when it has none left); `release` gives it back. */
  slot(key: string): OffloadSlot {
    const held = this.inFlight.get(key) ?? 0;
    if (held >= this.settings.OFFLOAD_PER_KEY) {
      throw new AppError(
        'rate_limited',
        `This API key already has ${held} heavy requests (CAP documents, large bodies) being processed; retry after ${RETRY_AFTER_SECONDS} s.`,
        {},
        { retryAfterSeconds: RETRY_AFTER_SECONDS },
      );
    }
    this.inFlight.set(key, held + 1);
    return new OffloadSlot(this, key);
  }

  /** Runs one task under one of `key`'s slots. */
  async run<I, O>(key: string, task: OffloadTask<I, O>, input: I): Promise<O> {
    const slot = this.slot(key);
    try {
      return await slot.run(task, input);
    } finally {
      slot.release();
    }
  }

  /** @internal to OffloadSlot: submits a job to the pool, or refuses it (503) when the queue is full. */
  async submit<I, O>(task: OffloadTask<I, O>, input: I): Promise<O> {
    const pool = this.started();
    if (pool.queueSize >= this.settings.OFFLOAD_QUEUE) {
      throw new AppError(
        'unavailable',
        `The service is busy with heavy requests (CAP documents, large bodies); retry after ${RETRY_AFTER_SECONDS} s.`,
        {},
        { retryAfterSeconds: RETRY_AFTER_SECONDS },
      );
    }
    const outcome = (await pool.run({ module: task.module, name: task.name, input })) as OffloadOutcome<O>;
    if (outcome.ok) return outcome.value;
    throw rebuiltError(outcome.error);
  }

  /** @internal to OffloadSlot. */
  release(key: string): void {
    const held = (this.inFlight.get(key) ?? 1) - 1;
    if (held <= 0) this.inFlight.delete(key);
    else this.inFlight.set(key, held);
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.destroy();
  }

  private started(): Piscina {
    this.pool ??= new Piscina({
      filename: WORKER_FILE.href,
      minThreads: this.settings.OFFLOAD_THREADS,
      maxThreads: this.settings.OFFLOAD_THREADS,
      idleTimeout: 60_000,
      niceIncrement: WORKER_NICE_INCREMENT,
    });
    return this.pool;
  }
}

/** One job slot of a key, taken before the job's input is even read (a large body), released once its answer is known. */
export class OffloadSlot {
  private released = false;
  constructor(
    private readonly offload: Offload,
    private readonly key: string,
  ) {}

  run<I, O>(task: OffloadTask<I, O>, input: I): Promise<O> {
    return this.offload.submit(task, input);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.offload.release(this.key);
  }
}
