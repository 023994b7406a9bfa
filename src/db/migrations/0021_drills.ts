import type { Kysely } from 'kysely';

/**
 * Drills (extensions §11).
 * - `drills`: an org's scheduled exercise, its RRULE (null: run only on demand) and `next_run_at`, the database timer a worker
 *   claims with a compare-and-set; `deleted_at` hides a deleted drill while its runs under way still complete.
 * - `drill_runs`: one row per run, unique per (drill, scheduled time) so that each occurrence runs once; `status` moves
 *   `starting` (claimed) → `running` (its exercise emergency declared) → `completed` (resolved, report stored).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('drills')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('category_id', 'text')
    .addColumn('description', 'text')
    .addColumn('schedule', 'text')
    .addColumn('ack_deadline_seconds', 'integer', (c) => c.notNull())
    .addColumn('resolve_after_seconds', 'integer')
    .addColumn('next_run_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema.createIndex('drills_org').on('drills').columns(['org_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('drills_next_run').on('drills').column('next_run_at').execute();
  await db.schema
    .createTable('drill_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('drill_id', 'text', (c) => c.notNull())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('scheduled_for', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('emergency_id', 'text')
    .addColumn('event_id', 'text')
    .addColumn('started_at', 'text')
    .addColumn('resolve_at', 'text')
    .addColumn('completed_at', 'text')
    .addColumn('report', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('drill_runs_once', ['drill_id', 'scheduled_for'])
    .execute();
  await db.schema.createIndex('drill_runs_of_drill').on('drill_runs').columns(['drill_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('drill_runs_status').on('drill_runs').columns(['status', 'resolve_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('drill_runs').ifExists().execute();
  await db.schema.dropTable('drills').ifExists().execute();
}
