import type { Kysely } from 'kysely';
import type { DbHandle } from '../db/connect.js';
import { preparedQuery } from '../db/prepared.js';
import type { Database, EventTable } from '../db/types.js';

export interface StoredEvent {
  offset: number;
  payload: string;
  createdAtMs: number;
}

const eventsAfterQuery = preparedQuery((db, p) =>
  db
    .selectFrom('events')
    .select(['stream_offset', 'payload', 'created_at'])
    .where('org_id', '=', p('orgId'))
    .where('stream_offset', '>', p('after'))
    .orderBy('stream_offset')
    .limit(p('limit')),
);

/** Committed events of one org after `after`, in offset order; an org's offsets commit in increasing order, so none is skipped. */
export async function eventsAfter(handle: DbHandle, orgId: string, after: number, limit: number): Promise<StoredEvent[]> {
  const rows = await eventsAfterQuery.execute(handle, { orgId, after, limit });
  return rows.map((r) => ({ offset: Number(r.stream_offset), payload: r.payload, createdAtMs: Date.parse(r.created_at) }));
}

/** The org's last committed stream offset (0 when it has no events). */
export async function committedOffset(db: Kysely<Database>, orgId: string): Promise<number> {
  const row = await db.selectFrom('orgs').select('event_offset').where('id', '=', orgId).executeTakeFirst();
  return row ? Number(row.event_offset) : 0;
}

/** Last committed offsets of several orgs: the backstop poll compares them with what was read. */
export async function committedOffsets(db: Kysely<Database>, orgIds: string[]): Promise<Map<string, number>> {
  const result = new Map<string, number>();
  for (let i = 0; i < orgIds.length; i += 500) {
    const rows = await db
      .selectFrom('orgs')
      .select(['id', 'event_offset'])
      .where('id', 'in', orgIds.slice(i, i + 500))
      .execute();
    for (const r of rows) result.set(r.id, Number(r.event_offset));
  }
  return result;
}

/** A column of a stored event. */
export type EventColumn = keyof EventTable;
/** A stored event with the columns a reader asked for. */
export type EventRow<C extends EventColumn> = Pick<EventTable, C>;

/** Ids per statement of an `in` list, within both drivers' parameter limits. */
const ID_LIST_CHUNK = 500;
/** Emergencies per statement when their events are read together. */
const EMERGENCY_CHUNK = 100;

/** The org's events in (after, upTo], in stream order: the gap-free per-org order, never a global one. */
export async function eventsInRange(
  db: Kysely<Database>,
  orgId: string,
  after: number,
  upTo: number,
): Promise<EventRow<'id' | 'stream_offset' | 'event_type' | 'created_at' | 'payload'>[]> {
  return db
    .selectFrom('events')
    .select(['id', 'stream_offset', 'event_type', 'created_at', 'payload'])
    .where('org_id', '=', orgId)
    .where('stream_offset', '>', after)
    .where('stream_offset', '<=', upTo)
    .orderBy('stream_offset')
    .execute();
}

/** Events by id, with the columns asked for, in no particular order; an id whose event was removed (retention) finds nothing. */
export async function eventsWithIds<C extends EventColumn>(db: Kysely<Database>, ids: readonly string[], columns: readonly C[]): Promise<EventRow<C>[]> {
  const found: EventRow<C>[] = [];
  for (let i = 0; i < ids.length; i += ID_LIST_CHUNK) {
    // By primary key alone: with an `org_id in (...)` condition SQLite prefers the (org_id, stream_offset)
    // index and walks every event of those orgs. A caller that knows the org checks it on the rows.
    const rows = await db
      .selectFrom('events')
      .select(columns)
      .where('id', 'in', ids.slice(i, i + ID_LIST_CHUNK))
      .execute();
    found.push(...(rows as unknown as EventRow<C>[]));
  }
  return found;
}

/** Conditions on the events of a stream besides their offset: any of `types`, of one emergency. */
export interface EventFilter {
  types?: readonly string[];
  emergencyId?: string;
}

/** The org's events after `after` that match `filter`, in stream order, at most `limit`. */
export async function matchingEventsAfter(
  db: Kysely<Database>,
  orgId: string,
  after: number,
  filter: EventFilter,
  limit: number,
): Promise<EventRow<'stream_offset' | 'payload'>[]> {
  let query = db.selectFrom('events').select(['stream_offset', 'payload']).where('org_id', '=', orgId).where('stream_offset', '>', after);
  if (filter.types) query = query.where('event_type', 'in', filter.types);
  if (filter.emergencyId !== undefined) query = query.where('emergency_id', '=', filter.emergencyId);
  return query.orderBy('stream_offset').limit(limit).execute();
}

/** Where a read of one emergency's events starts: at its first, after a sequence number, or at exactly one. */
export type SequenceStart = { after?: number } | { at: number };

/** One emergency's events in sequence order from `start`, at most `limit`, with the columns asked for. */
export async function emergencyEvents<C extends EventColumn>(
  db: Kysely<Database>,
  orgId: string,
  emergencyId: string,
  start: SequenceStart,
  limit: number,
  columns: readonly C[],
): Promise<EventRow<C>[]> {
  let query = db.selectFrom('events').select(columns).where('org_id', '=', orgId).where('emergency_id', '=', emergencyId);
  if ('at' in start) query = query.where('sequence', '=', start.at);
  else if (start.after !== undefined) query = query.where('sequence', '>', start.after);
  const rows = await query.orderBy('sequence').limit(limit).execute();
  return rows as unknown as EventRow<C>[];
}

/** The events of these emergencies of the org that are of `types`, by emergency then sequence. */
export async function eventsOfEmergencies(
  db: Kysely<Database>,
  orgId: string,
  emergencyIds: readonly string[],
  types: readonly string[],
): Promise<EventRow<'emergency_id' | 'event_type' | 'sequence' | 'created_at'>[]> {
  const found: EventRow<'emergency_id' | 'event_type' | 'sequence' | 'created_at'>[] = [];
  for (let i = 0; i < emergencyIds.length; i += EMERGENCY_CHUNK) {
    const rows = await db
      .selectFrom('events')
      .select(['emergency_id', 'event_type', 'sequence', 'created_at'])
      .where('org_id', '=', orgId)
      .where('emergency_id', 'in', emergencyIds.slice(i, i + EMERGENCY_CHUNK))
      .where('event_type', 'in', types)
      .orderBy('emergency_id')
      .orderBy('sequence')
      .execute();
    found.push(...rows);
  }
  return found;
}

/** The org's events created in [since, until) (open-ended without `until`), of `types` when given, in stream order, at most `limit`. */
export async function eventsCreatedBetween(
  db: Kysely<Database>,
  orgId: string,
  range: { since: string; until?: string },
  types: readonly string[] | null,
  limit: number,
): Promise<EventRow<'id' | 'event_type' | 'created_at'>[]> {
  let query = db.selectFrom('events').select(['id', 'event_type', 'created_at']).where('org_id', '=', orgId).where('created_at', '>=', range.since);
  if (range.until !== undefined) query = query.where('created_at', '<', range.until);
  if (types) query = query.where('event_type', 'in', types);
  return query.orderBy('stream_offset').limit(limit).execute();
}

/** The org's newest committed offset and the highest one removed by retention (both 0 for an empty stream). */
export async function streamBounds(db: Kysely<Database>, orgId: string): Promise<{ lastOffset: number; prunedOffset: number }> {
  const row = await db.selectFrom('orgs').select(['event_offset', 'pruned_offset']).where('id', '=', orgId).executeTakeFirst();
  return { lastOffset: Number(row?.event_offset ?? 0), prunedOffset: Number(row?.pruned_offset ?? 0) };
}

/**
 * Every org's newest committed offset (`head`) as a table, for a statement that relates its own rows to
 * the heads in one read. Both databases merge it into the statement: joining it costs what naming the
 * column would.
 */
export function streamHeads(db: Kysely<Database>) {
  return db.selectFrom('orgs').select(['id as org_id', 'event_offset as head']);
}

/**
 * Where each stored event sits (its org's stream offset, its emergency's sequence), its type and when it
 * was created, without its payload, as a table, for a statement that relates its own rows to events in
 * one read (an aggregate the database computes). Both databases merge it into the statement.
 */
export function eventPositions(db: Kysely<Database>) {
  return db.selectFrom('events').select(['id', 'org_id', 'emergency_id', 'sequence', 'stream_offset', 'event_type', 'created_at']);
}
