import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';

export { eventsAfter, type StoredEvent } from '../db/reads.js';

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
