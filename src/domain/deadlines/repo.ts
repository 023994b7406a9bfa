import type { Kysely } from 'kysely';
import type { Tx } from '../../db/connect.js';
import type { AckDeadlineTable, Database } from '../../db/types.js';
import { eventsWithIds } from '../../log/reads.js';

type Db = Kysely<Database>;

/** Ids per statement of an `in` list, within both drivers' parameter limits. */
const CHUNK = 500;

/** The deadlines of these events of the org, by event id (events without one are absent). */
export async function deadlinesOfEvents(
  db: Db,
  orgId: string,
  eventIds: readonly string[],
): Promise<Map<string, Pick<AckDeadlineTable, 'deadline_at' | 'state'>>> {
  const found = new Map<string, Pick<AckDeadlineTable, 'deadline_at' | 'state'>>();
  for (let i = 0; i < eventIds.length; i += CHUNK) {
    const rows = await db
      .selectFrom('ack_deadlines')
      .select(['event_id', 'deadline_at', 'state'])
      .where('org_id', '=', orgId)
      .where('event_id', 'in', eventIds.slice(i, i + CHUNK))
      .execute();
    for (const row of rows) found.set(row.event_id, { deadline_at: row.deadline_at, state: row.state });
  }
  return found;
}

/** The earliest deadline still pending (due or not), or null when none is. */
export async function nextPendingDeadline(db: Db): Promise<string | null> {
  const row = await db.selectFrom('ack_deadlines').select('deadline_at').where('state', '=', 'pending').orderBy('deadline_at').limit(1).executeTakeFirst();
  return row?.deadline_at ?? null;
}

/**
 * Pending deadlines due at `now`, earliest first, locked until the transaction ends; rows another
 * worker holds are skipped (SKIP LOCKED), and a row it has already settled no longer reads as pending.
 */
export async function claimDueDeadlines(tx: Tx, now: string, limit: number): Promise<AckDeadlineTable[]> {
  const query = tx.db
    .selectFrom('ack_deadlines')
    .selectAll()
    .where('state', '=', 'pending')
    .where('deadline_at', '<=', now)
    .orderBy('deadline_at')
    .limit(limit);
  return tx.skipLocked(query).execute();
}

/** Whether any overdue deadline is marked for a look, or (with `endedBefore`) has a watch that ended: a plain read, no transaction. */
export async function anyOverdueToSettle(db: Db, endedBefore?: string): Promise<boolean> {
  let query = db.selectFrom('ack_deadlines').select('event_id').where('state', '=', 'overdue');
  query = endedBefore === undefined ? query.where('check_at', 'is not', null) : query.where('deadline_at', '<', endedBefore);
  return (await query.limit(1).executeTakeFirst()) !== undefined;
}

/**
 * Overdue deadlines marked for a look (an acknowledgement or a revocation may have completed them), oldest mark first,
 * locked until the transaction ends; rows another worker holds are skipped. Unmarked rows are never read.
 */
export async function claimMarkedOverdue(tx: Tx, limit: number): Promise<AckDeadlineTable[]> {
  const query = tx.db.selectFrom('ack_deadlines').selectAll().where('check_at', 'is not', null).where('state', '=', 'overdue').orderBy('check_at').limit(limit);
  return tx.skipLocked(query).execute();
}

/** Overdue deadlines whose deadline passed before `before` (their watch has ended), locked; rows another worker holds are skipped. */
export async function claimEndedWatches(tx: Tx, before: string, limit: number): Promise<AckDeadlineTable[]> {
  const query = tx.db
    .selectFrom('ack_deadlines')
    .selectAll()
    .where('state', '=', 'overdue')
    .where('deadline_at', '<', before)
    .orderBy('deadline_at')
    .limit(limit);
  return tx.skipLocked(query).execute();
}

/**
 * Marks the org's overdue events with an offset in (`after`, `upTo`] for a look: an acknowledgement that moved a device
 * from `after` to `upTo` (or a revocation, with `upTo` unbounded) may have completed them, and no other. Written in the
 * transaction that records the change, so a crash cannot lose the look.
 */
export async function markOverdueForCheck(tx: Pick<Tx, 'db'>, orgId: string, after: number, upTo: number | null, at: string): Promise<void> {
  let query = tx.db
    .updateTable('ack_deadlines')
    .set({ check_at: at })
    .where('org_id', '=', orgId)
    .where('state', '=', 'overdue')
    .where('event_offset', '>', after);
  if (upTo !== null) query = query.where('event_offset', '<=', upTo);
  await query.execute();
}

/** Sets a claimed deadline's state (and when it changed), in the claiming transaction. */
export async function settleDeadline(
  tx: Tx,
  eventId: string,
  change: Partial<Pick<AckDeadlineTable, 'state' | 'overdue_at' | 'closed_at' | 'event_offset' | 'check_at'>>,
): Promise<void> {
  await tx.db.updateTable('ack_deadlines').set(change).where('event_id', '=', eventId).execute();
}

/** The watched events, by id: what the targeting rule needs of each. */
export async function watchedEvents(db: Db, eventIds: readonly string[]): Promise<Map<string, { stream_offset: number; created_at: string }>> {
  const found = new Map<string, { stream_offset: number; created_at: string }>();
  for (const row of await eventsWithIds(db, eventIds, ['id', 'stream_offset', 'created_at'])) {
    found.set(row.id, { stream_offset: Number(row.stream_offset), created_at: row.created_at });
  }
  return found;
}

export interface DueResend {
  eventId: string;
  orgId: string;
  offset: number;
  createdAt: string;
  payload: string;
}

/**
 * Events of these orgs whose deadline is still pending and whose re-send fell due in (from, to], with their stored envelope,
 * in stream order within each org. Most checks find no deadline due and end after the first read.
 */
export async function resendsDue(db: Db, orgIds: readonly string[], from: string, to: string): Promise<DueResend[]> {
  const due: DueResend[] = [];
  for (let i = 0; i < orgIds.length; i += CHUNK) {
    const deadlines = await db
      .selectFrom('ack_deadlines')
      .select('event_id')
      .where('resend_at', '>', from)
      .where('resend_at', '<=', to)
      .where('state', '=', 'pending')
      .where('org_id', 'in', orgIds.slice(i, i + CHUNK))
      .execute();
    if (deadlines.length === 0) continue;
    // An event removed by retention meanwhile is no longer found, and is not sent again.
    const events = await eventsWithIds(
      db,
      deadlines.map((d) => d.event_id),
      ['id', 'org_id', 'stream_offset', 'created_at', 'payload'],
    );
    const found = events.map((e) => ({ eventId: e.id, orgId: e.org_id, offset: Number(e.stream_offset), createdAt: e.created_at, payload: e.payload }));
    due.push(...found.sort((a, b) => a.offset - b.offset));
  }
  return due;
}

/** Settled deadlines of events older than the retention: their events are gone or going. */
export async function pruneSettledDeadlines(db: Db, before: string): Promise<void> {
  await db.deleteFrom('ack_deadlines').where('state', 'in', ['met', 'completed', 'expired']).where('deadline_at', '<', before).execute();
}
