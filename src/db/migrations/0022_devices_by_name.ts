import type { Kysely } from 'kysely';

/**
 * The active devices of an org in name order: an overdue event names the first hundred silent ones, and with this index that
 * read stops at the hundredth instead of sorting every device of the org under the deadline worker's claim.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('devices_by_name_idx').on('devices').columns(['org_id', 'status', 'name', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('devices_by_name_idx').ifExists().execute();
}
