import type { Kysely } from 'kysely';
import { inTransaction, type DbHandle } from '../db/connect.js';
import type { Database } from '../db/types.js';

const DELETE_CHUNK = 1_000;

/**
 * Removes events and device acks older than the retention. For each org it first raises
 * `pruned_offset` to the newest offset it removes, in the same transaction as the delete, so a reader
 * can never see the gap without also seeing the 410 that explains it. Offsets of an org grow with
 * time, so the removed events are always a prefix of its stream.
 * Returns the number of events removed.
 */
export async function pruneExpiredEvents(handle: DbHandle, retentionDays: number, now = Date.now()): Promise<number> {
  const cutoff = new Date(now - retentionDays * 86_400_000).toISOString();
  const expired = await handle.db
    .selectFrom('events')
    .select(['org_id', (eb) => eb.fn.max('stream_offset').as('through')])
    .where('created_at', '<', cutoff)
    .groupBy('org_id')
    .execute();
  let removed = 0;
  for (const { org_id: orgId, through } of expired) {
    const upTo = Number(through);
    removed += await inTransaction(handle, async (tx) => {
      await tx.db.updateTable('orgs').set({ pruned_offset: upTo }).where('id', '=', orgId).where('pruned_offset', '<', upTo).execute();
      return deleteInChunks(tx.db, orgId, upTo);
    });
  }
  await handle.db.deleteFrom('device_acks').where('acked_at', '<', cutoff).execute();
  return removed;
}

async function deleteInChunks(db: Kysely<Database>, orgId: string, upTo: number): Promise<number> {
  let removed = 0;
  for (;;) {
    const batch = await db
      .selectFrom('events')
      .select('stream_offset')
      .where('org_id', '=', orgId)
      .where('stream_offset', '<=', upTo)
      .orderBy('stream_offset')
      .limit(DELETE_CHUNK)
      .execute();
    if (batch.length === 0) return removed;
    const last = Number(batch[batch.length - 1]!.stream_offset);
    const result = await db.deleteFrom('events').where('org_id', '=', orgId).where('stream_offset', '<=', last).executeTakeFirst();
    removed += Number(result.numDeletedRows);
    if (batch.length < DELETE_CHUNK) return removed;
  }
}
