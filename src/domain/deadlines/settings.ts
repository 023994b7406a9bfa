import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { CategoryTable, Database } from '../../db/types.js';
import type { Writes } from '../../db/unit-of-work.js';
import type { EventEnvelope } from '../../log/append.js';
import { WATCHED_EVENT_TYPES } from './schema.js';

/**
 * Which acknowledgement deadline an event gets, and its row. Every declare needs the org's setting, so
 * it is cached briefly per instance like categories are: a change made here applies at once, one made
 * on another instance once the entry expires.
 */
const ORG_SETTING_TTL_MS = 5_000;
// Entries carry their own read time, as the category cache's do: no TTL clock bookkeeping on the declare's path.
const orgSettings = new LRUCache<string, { seconds: number | null; readAt: number }>({ max: 100_000 });

async function readOrgAckDeadline(db: Kysely<Database>, orgId: string): Promise<number | null> {
  const row = await db.selectFrom('orgs').select('ack_deadline_seconds').where('id', '=', orgId).executeTakeFirst();
  const seconds = row?.ack_deadline_seconds === null || row?.ack_deadline_seconds === undefined ? null : Number(row.ack_deadline_seconds);
  orgSettings.set(orgId, { seconds, readAt: Date.now() });
  return seconds;
}

/** The org's deadline in seconds, or null when it has none; a value, not a promise, when cached (the declare's common case). */
export function orgAckDeadline(db: Kysely<Database>, orgId: string): number | null | Promise<number | null> {
  const cached = orgSettings.get(orgId);
  if (cached && Date.now() - cached.readAt <= ORG_SETTING_TTL_MS) return cached.seconds;
  return readOrgAckDeadline(db, orgId);
}

/** After the org's setting changed (and committed): the next event reads it again. */
export function forgetOrgAckDeadline(orgId: string): void {
  orgSettings.delete(orgId);
}

/** The deadline of an event of an emergency in `category`: the category's when it sets one, else the org's (see orgAckDeadline). */
export function ackDeadlineFor(
  db: Kysely<Database>,
  orgId: string,
  category: Pick<CategoryTable, 'ack_deadline_seconds'>,
): number | null | Promise<number | null> {
  if (category.ack_deadline_seconds !== null && category.ack_deadline_seconds !== undefined) return Number(category.ack_deadline_seconds);
  return orgAckDeadline(db, orgId);
}

/**
 * Records the deadline of `event` in the unit of work that appends it, so both commit or neither does.
 * The clock starts at the event's creation; the re-send is due half-way.
 */
export function recordAckDeadline(writes: Pick<Writes, 'deadlines'>, event: EventEnvelope, seconds: number | null): void {
  if (seconds === null || !(WATCHED_EVENT_TYPES as readonly string[]).includes(event.eventType)) return;
  const start = Date.parse(event.createdAt);
  writes.deadlines.insert({
    event_id: event.eventId,
    org_id: event.orgId,
    emergency_id: event.emergencyId,
    event_type: event.eventType,
    deadline_seconds: seconds,
    resend_at: new Date(start + seconds * 500).toISOString(),
    deadline_at: new Date(start + seconds * 1000).toISOString(),
    state: 'pending',
    overdue_at: null,
    closed_at: null,
    event_offset: null,
    check_at: null,
  });
}
