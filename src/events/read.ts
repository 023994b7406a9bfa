import type { Kysely } from 'kysely';
import type { DbHandle } from '../db/connect.js';
import { preparedQuery } from '../db/prepared.js';
import type { Database } from '../db/types.js';

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
