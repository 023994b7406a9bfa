import { type Kysely, sql } from 'kysely';

/**
 * The watch of overdue events, driven by acknowledgements instead of a scan of every overdue event.
 * - `ack_deadlines.event_offset`: the watched event's stream offset, written when the row turns
 *   `overdue`; an acknowledgement up to offset N marks only the overdue rows it could complete.
 * - `ack_deadlines.check_at`: set by the transaction that records an acknowledgement (or revokes a
 *   device) that may complete the overdue event; the deadline worker claims the marked rows, looks at
 *   them once and clears the mark. Rows without a mark cost nothing, whatever their number.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('ack_deadlines').addColumn('event_offset', 'integer').execute();
  await db.schema.alterTable('ack_deadlines').addColumn('check_at', 'text').execute();
  // Rows already overdue keep being watched: their offset comes from their event, and each is looked at once.
  await db
    .updateTable('ack_deadlines')
    .set((eb) => ({
      event_offset: eb.selectFrom('events').select('events.stream_offset').whereRef('events.id', '=', 'ack_deadlines.event_id'),
      check_at: eb.ref('ack_deadlines.deadline_at'),
    }))
    .where('state', '=', 'overdue')
    .execute();
  await db.schema.createIndex('ack_deadlines_watch_idx').on('ack_deadlines').columns(['org_id', 'state', 'event_offset']).execute();
  await db.schema.createIndex('ack_deadlines_check_idx').on('ack_deadlines').column('check_at').where(sql.ref('check_at'), 'is not', null).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('ack_deadlines_check_idx').ifExists().execute();
  await db.schema.dropIndex('ack_deadlines_watch_idx').ifExists().execute();
  await db.schema.alterTable('ack_deadlines').dropColumn('check_at').execute();
  await db.schema.alterTable('ack_deadlines').dropColumn('event_offset').execute();
}
