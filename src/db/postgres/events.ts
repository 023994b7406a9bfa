import { sql } from 'kysely';
import { columnArrays, type InsertColumn, insertColumns, unnestRows } from '../insert-columns.js';
import type { EventInsert } from '../unit-of-work.js';

/** The channel on which an instance announces `{orgId, offset}` to every instance once a write has committed (notifier.ts). */
export const PG_EVENT_CHANNEL = 'emergency_events';

/** A value placeholder of a prepared query (see preparedQuery). */
type Param = (name: string) => any;

/** The event columns a writer gives; the org travels once and the offset is taken here. */
const EVENT_COLUMNS = insertColumns('events').filter(
  (c): c is Exclude<InsertColumn<'events'>, 'org_id' | 'stream_offset'> => c !== 'org_id' && c !== 'stream_offset',
);

/**
 * The CTEs that take an org's event offsets, the one place on PostgreSQL: the bumped org row stays locked until the
 * commit, so the org's offsets commit in order without gaps. They end a WITH list before `appendedEventsResult`.
 */
export const appendEventsCtes = (p: Param) => sql`
  input as (
    select * from ${unnestRows('events', EVENT_COLUMNS, p, 'i', true)}
  ), bumped as (
    update orgs set event_offset = event_offset + (select count(*) from input) where id = ${p('org_id')} returning event_offset
  ), inserted as (
    insert into events (org_id, stream_offset, ${sql.join(EVENT_COLUMNS.map((c) => sql.id(c)))})
    select ${p('org_id')}, b.event_offset - (select count(*) from input) + i.n, ${sql.join(EVENT_COLUMNS.map((c) => sql.ref(`i.${c}`)))}
    from input i cross join bumped b
    returning stream_offset
  )`;

/** The last offset written, or no row when the org does not exist; other instances hear of it after the commit (notifier.ts). */
export const appendedEventsResult = sql<{ last_offset: string | number }>`
  select max(stream_offset) as last_offset
  from inserted
  having count(*) > 0`;

/** The event columns as parallel arrays, one statement for any number of events. */
export function eventColumns(events: readonly EventInsert[]): Record<string, unknown[]> {
  return columnArrays('events', events, EVENT_COLUMNS);
}
