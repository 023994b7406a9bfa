import type { Kysely } from 'kysely';

/**
 * Per-tenant connection quotas: an org's and a partner's own limits on device sockets and event streams
 * per instance. A row exists only where an admin set a quota; a null column (or no row) means the
 * instance's default (DEVICES_PER_ORG, STREAMS_PER_ORG, DEVICES_PER_PARTNER, STREAMS_PER_PARTNER).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('org_connection_quotas')
    .addColumn('org_id', 'text', (c) => c.primaryKey())
    .addColumn('devices', 'integer')
    .addColumn('streams', 'integer')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('partner_connection_quotas')
    .addColumn('partner_id', 'text', (c) => c.primaryKey())
    .addColumn('devices', 'integer')
    .addColumn('streams', 'integer')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('partner_connection_quotas').ifExists().execute();
  await db.schema.dropTable('org_connection_quotas').ifExists().execute();
}
