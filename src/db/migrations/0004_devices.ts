import type { Kysely } from 'kysely';

/**
 * Base-station devices. Presence is stored in the row so `admin device list` (another process, or
 * another instance) can tell whether a device is online: `connection_id` names the connection that
 * currently holds the device, and `last_seen_at` is refreshed by the gateway while it is connected.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('devices')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('token_prefix', 'text', (c) => c.notNull().unique())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .addColumn('last_seen_at', 'text')
    .addColumn('connection_id', 'text')
    .addColumn('connected_at', 'text')
    .addColumn('disconnected_at', 'text')
    .addColumn('acked_offset', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('acked_at', 'text')
    .execute();
  await db.schema.createIndex('devices_org_idx').on('devices').columns(['org_id', 'created_at']).execute();
  // The gateway polls for recent revocations to close sockets that are already open.
  await db.schema.createIndex('devices_revoked_idx').on('devices').column('revoked_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('devices').ifExists().execute();
}
