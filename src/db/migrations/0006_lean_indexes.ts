import { type Kysely, sql } from 'kysely';

/**
 * Two indexes every declare paid for without any query needing them:
 * - the (org_id, external_id) uniqueness covered every emergency, most of which have no externalId;
 *   a partial index keeps the same guarantee and is touched only by declares that carry one (lookups
 *   by externalId still use it: `external_id = ?` implies `external_id is not null`);
 * - events(created_at): event reads go by (org_id, stream_offset), replay included.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('emergencies_org_external_uq').execute();
  await sql`create unique index emergencies_org_external_uq on emergencies (org_id, external_id) where external_id is not null`.execute(db);
  await db.schema.dropIndex('events_created_idx').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('events_created_idx').on('events').columns(['created_at']).execute();
  await db.schema.dropIndex('emergencies_org_external_uq').execute();
  await db.schema.createIndex('emergencies_org_external_uq').on('emergencies').columns(['org_id', 'external_id']).unique().execute();
}
