import type { Kysely } from 'kysely';

/**
 * Acknowledgement deadlines.
 * - `orgs.ack_deadline_seconds`, `categories.ack_deadline_seconds`: the setting (null: off for an
 *   org, inherit the org's for a category).
 * - `ack_deadlines`: one row per event written with a deadline, in the event's own transaction, so a
 *   deadline is never lost to a crash. `state` is `pending` until the deadline, then `met` (every
 *   targeted device had acknowledged) or `overdue` (an emergency.delivery_overdue was appended in the
 *   transaction that set it), and an overdue row ends `completed` (emergency.delivery_completed) or
 *   `expired` (no longer watched). The deadline worker finds due rows by (state, deadline_at), the
 *   gateways the re-sends due in a time window by resend_at.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('orgs').addColumn('ack_deadline_seconds', 'integer').execute();
  await db.schema.alterTable('categories').addColumn('ack_deadline_seconds', 'integer').execute();
  await db.schema
    .createTable('ack_deadlines')
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('emergency_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('deadline_seconds', 'integer', (c) => c.notNull())
    .addColumn('resend_at', 'text', (c) => c.notNull())
    .addColumn('deadline_at', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('overdue_at', 'text')
    .addColumn('closed_at', 'text')
    .execute();
  await db.schema.createIndex('ack_deadlines_due_idx').on('ack_deadlines').columns(['state', 'deadline_at']).execute();
  await db.schema.createIndex('ack_deadlines_resend_idx').on('ack_deadlines').column('resend_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('ack_deadlines').ifExists().execute();
  await db.schema.alterTable('categories').dropColumn('ack_deadline_seconds').execute();
  await db.schema.alterTable('orgs').dropColumn('ack_deadline_seconds').execute();
}
