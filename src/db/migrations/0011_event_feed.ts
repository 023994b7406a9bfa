import { type Kysely, sql } from 'kysely';

/**
 * The event feed and delivery receipts.
 * - `orgs.pruned_offset`: the highest offset of the org's stream removed by retention (0 = none), so
 *   a reader asking for events after an older offset is told they expired instead of silently
 *   getting a gap.
 * - `device_acks`: each advance of a device's acknowledged offset, as the range (previous, to_offset]
 *   acknowledged at `acked_at`. The first ack that covered event N for a device is its row with the
 *   smallest `to_offset` >= N: one index seek per device on (device_id, to_offset).
 * - `webhook_deliveries(event_id)`: the receipts of one emergency count its deliveries per event.
 * - a partial index of the emergencies not resolved: the unacknowledged-devices gauge reads only those.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('orgs')
    .addColumn('pruned_offset', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('device_acks')
    .addColumn('device_id', 'text', (c) => c.notNull())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('to_offset', 'integer', (c) => c.notNull())
    .addColumn('acked_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('device_acks_pk', ['device_id', 'to_offset'])
    .execute();
  // Retention removes old acks by time.
  await db.schema.createIndex('device_acks_time_idx').on('device_acks').column('acked_at').execute();
  await db.schema.createIndex('webhook_deliveries_event_idx').on('webhook_deliveries').column('event_id').execute();
  await db.schema.createIndex('emergencies_open_idx').on('emergencies').column('org_id').where(sql.ref('status'), '<>', 'resolved').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('emergencies_open_idx').ifExists().execute();
  await db.schema.dropIndex('webhook_deliveries_event_idx').ifExists().execute();
  await db.schema.dropTable('device_acks').ifExists().execute();
  await db.schema.alterTable('orgs').dropColumn('pruned_offset').execute();
}
