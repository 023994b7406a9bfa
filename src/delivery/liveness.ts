import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';

/** How often a worker beats its row. */
export const HEARTBEAT_INTERVAL_MS = 1000;
/**
 * A worker that has not beaten for this long is dead, and its claims are taken over. Five beats: a
 * live worker whose event loop is busy for a few seconds keeps its claims (its requests run on).
 */
export const DEAD_AFTER_MS = 5 * HEARTBEAT_INTERVAL_MS;

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
export async function registerWorker(db: Kysely<Database>, worker: { workerId: string; host: string; pid: number }): Promise<number> {
  const local = await db.selectFrom('delivery_workers').select(['worker_id', 'pid']).where('host', '=', worker.host).execute();
  const gone = local.filter((w) => w.worker_id !== worker.workerId && w.pid !== process.pid && !processRuns(Number(w.pid))).map((w) => w.worker_id);
  if (gone.length > 0) await db.deleteFrom('delivery_workers').where('worker_id', 'in', gone).execute();
  const now = new Date().toISOString();
  await db
    .insertInto('delivery_workers')
    .values({ worker_id: worker.workerId, host: worker.host, pid: worker.pid, started_at: now, heartbeat_at: now })
    .onConflict((oc) => oc.column('worker_id').doUpdateSet({ heartbeat_at: now }))
    .execute();
  // Long-dead workers of other machines leave their rows behind; they are dead either way.
  await db
    .deleteFrom('delivery_workers')
    .where('heartbeat_at', '<', new Date(Date.now() - 3600_000).toISOString())
    .execute();
  return gone.length;
}

export async function beat(db: Kysely<Database>, workerId: string): Promise<void> {
  await db.updateTable('delivery_workers').set({ heartbeat_at: new Date().toISOString() }).where('worker_id', '=', workerId).execute();
}

/** On a clean stop: the worker's claims were handed back; its row goes too. */
export async function retireWorker(db: Kysely<Database>, workerId: string): Promise<void> {
  await db.deleteFrom('delivery_workers').where('worker_id', '=', workerId).execute();
}
