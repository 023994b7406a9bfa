import type { Kysely } from 'kysely';

/**
 * The webhook workers alive now: each beats its row every second. A delivery claimed by a worker
 * whose row is gone or has stopped beating is taken over at once, not when its lease expires.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('delivery_workers')
    .addColumn('worker_id', 'text', (c) => c.primaryKey())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('pid', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('heartbeat_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('delivery_workers').ifExists().execute();
}
