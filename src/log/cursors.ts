import type { Kysely } from 'kysely';
import type { Tx } from '../db/connect.js';
import type { Database } from '../db/types.js';

/**
 * Durable cursors of the log's follower that must not miss an event across restarts (the fan-out of
 * events into webhook deliveries): one row per org, the offset up to which its stream was taken. The
 * follower moves a cursor in the transaction that records what it made of the events, so both commit
 * or neither does.
 */

type Db = Kysely<Database>;

/** Orgs whose committed stream is ahead of their cursor (the polling backstop), at most `limit`. */
export async function orgsAheadOfCursor(db: Db, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('orgs as o')
    .leftJoin('webhook_cursors as c', 'c.org_id', 'o.id')
    .select('o.id')
    .where((eb) => eb('o.event_offset', '>', eb.fn.coalesce('c.last_offset', eb.lit(0))))
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Locks the org's cursor row and returns its offset, or null when another worker holds it (that
 * worker is following the same org right now; SKIP LOCKED keeps this one from waiting on it).
 */
export async function lockCursor(tx: Tx, orgId: string, now: string): Promise<number | null> {
  const select = () => {
    const q = tx.db.selectFrom('webhook_cursors').select('last_offset').where('org_id', '=', orgId);
    return tx.skipLocked(q).executeTakeFirst();
  };
  const found = await select();
  if (found) return Number(found.last_offset);
  // Not found: either it does not exist yet, or another worker holds it (skipped).
  const exists = await tx.db.selectFrom('webhook_cursors').select('org_id').where('org_id', '=', orgId).executeTakeFirst();
  if (exists) return null;
  // An org created after the migration: its stream starts at offset 1.
  await tx.db
    .insertInto('webhook_cursors')
    .values({ org_id: orgId, last_offset: 0, updated_at: now })
    .onConflict((oc) => oc.column('org_id').doNothing())
    .execute();
  const created = await select();
  return created ? Number(created.last_offset) : null;
}

/** Moves the org's locked cursor to `lastOffset`. */
export async function advanceCursor(tx: Tx, orgId: string, lastOffset: number, now: string): Promise<void> {
  await tx.db.updateTable('webhook_cursors').set({ last_offset: lastOffset, updated_at: now }).where('org_id', '=', orgId).execute();
}

/** The offset up to which the org's stream was taken (0 before the first). */
export async function cursorOffset(db: Db, orgId: string): Promise<number> {
  const cursor = await db.selectFrom('webhook_cursors').select('last_offset').where('org_id', '=', orgId).executeTakeFirst();
  return cursor ? Number(cursor.last_offset) : 0;
}
