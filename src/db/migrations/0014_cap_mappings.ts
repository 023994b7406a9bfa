import type { Kysely } from 'kysely';

/**
 * CAP 1.2 ingest and the CAP feed.
 * - `cap_event_mappings`: an organization's mapping of a CAP `event` to one of its categories, looked
 *   up by `event_key` (the event trimmed, its white space collapsed, lower case), unique per org.
 * - `emergency_resolutions (org_id, created_at)`: the feed lists the emergencies resolved in the last
 *   24 h of one org.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('cap_event_mappings')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('event_key', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('category_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('cap_event_mappings_org_event_uq').on('cap_event_mappings').columns(['org_id', 'event_key']).unique().execute();
  await db.schema.createIndex('emergency_resolutions_org_created_idx').on('emergency_resolutions').columns(['org_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('emergency_resolutions_org_created_idx').ifExists().execute();
  await db.schema.dropTable('cap_event_mappings').ifExists().execute();
}
