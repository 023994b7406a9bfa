import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { describeError } from '../observability/describe-error.js';
import type { DeliveryLogger } from './log.js';
import { beat, removeWorker, removeWorkers, removeWorkersSilentSince, upsertWorker, workersOn } from '../domain/webhooks/queue.js';

/** How often a worker beats its row. */
const HEARTBEAT_INTERVAL_MS = 1000;
/**
 * A worker that has not beaten for this long is dead, and its claims are taken over. Five beats: a
 * live worker whose event loop is busy for a few seconds keeps its claims (its requests run on).
 */
const DEAD_AFTER_MS = 5 * HEARTBEAT_INTERVAL_MS;
/** Rows of workers silent this long are removed by the next worker that registers. */
const FORGET_AFTER_MS = 3600_000;

/** The oldest heartbeat that still counts as alive, as stored (ISO text). */
export const aliveSince = (nowMs = Date.now()): string => new Date(nowMs - DEAD_AFTER_MS).toISOString();

/** Whether a process of this machine still runs (signal 0 checks without signalling). */
function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Registers a worker. The rows of earlier workers of this machine whose process is gone (this
 * instance before a crash or a restart) are removed at once, so their claims are taken over now
 * rather than once they stop looking alive.
 */
async function registerWorker(db: Kysely<Database>, worker: { workerId: string; host: string; pid: number }): Promise<number> {
  const local = await workersOn(db, worker.host);
  const gone = local.filter((w) => w.worker_id !== worker.workerId && w.pid !== process.pid && !processRuns(Number(w.pid))).map((w) => w.worker_id);
  if (gone.length > 0) await removeWorkers(db, gone);
  await upsertWorker(db, worker, new Date().toISOString());
  // Long-dead workers of other machines leave their rows behind; they are dead either way.
  await removeWorkersSilentSince(db, new Date(Date.now() - FORGET_AFTER_MS).toISOString());
  return gone.length;
}

/**
 * This worker's row in `delivery_workers`: registered before the first claim, beaten every second,
 * removed on a clean stop. Other workers take over the claims of a worker whose row goes silent.
 */
export class WorkerLiveness {
  private registration: Promise<void> = Promise.resolve();
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    readonly workerId: string,
    private readonly retryMs: number,
    private readonly stopping: AbortSignal,
    private readonly log: DeliveryLogger,
  ) {}

  start(): void {
    this.registration = this.register();
    this.heartbeat = setInterval(() => {
      beat(this.db, this.workerId, new Date().toISOString()).catch((err) => this.log.warn(describeError(err), 'webhook worker heartbeat failed'));
    }, HEARTBEAT_INTERVAL_MS);
    this.heartbeat.unref();
  }

  /** Settles once the worker is registered: until then it claims nothing (others would take its claims over). */
  registered(): Promise<void> {
    return this.registration;
  }

  stopBeating(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
  }

  /** On a clean stop, once its claims were handed back; a row left behind ages out. */
  async retire(): Promise<void> {
    await removeWorker(this.db, this.workerId).catch((err) => this.log.warn(describeError(err), 'removing the worker row failed; it ages out'));
  }

  private async register(): Promise<void> {
    for (;;) {
      try {
        const [host, pid] = this.workerId.split(':');
        const tookOver = await registerWorker(this.db, {
          workerId: this.workerId,
          host: host ?? hostname(),
          pid: Number(pid) || process.pid,
        });
        if (tookOver > 0) this.log.info({ workers: tookOver, workerId: this.workerId }, 'took over the deliveries of workers of this machine that are gone');
        return;
      } catch (err) {
        if (this.stopping.aborted) return;
        this.log.error(describeError(err), 'registering the webhook worker failed; retrying');
        await new Promise((r) => setTimeout(r, this.retryMs));
      }
    }
  }
}
