import type { Kysely } from 'kysely';
import type { SqliteStatements } from '../handle.js';
import { type InsertColumn, type InsertedTable, insertColumns } from '../insert-columns.js';
import { preparedQuery } from '../prepared.js';
import { IdempotencyKeyTaken, isIdempotencyKeyConflict } from '../idempotency.js';
import type { Database, IdempotencyKeyTable } from '../types.js';
import type { CommittedEvent, LockedEmergency, WriteSet } from '../unit-of-work.js';
import type { BatchEventOffsets } from './event-offsets.js';

/** Where the statements of a group-commit job run: the batch's transaction, straight on its connection. */
export interface JobConnection {
  db: Kysely<Database>;
  dialect: 'sqlite';
  sqliteDirect(): SqliteStatements;
}

/** A prepared insert of one row of `table`, each column bound to the value of the same name. */
function preparedInsert<T extends InsertedTable>(table: T, columns: readonly InsertColumn<T>[] = insertColumns(table)) {
  return preparedQuery((db, p) => db.insertInto(table).values(Object.fromEntries(columns.map((column) => [column, p(column)])) as any));
}

const insertEmergency = preparedInsert('emergencies');

const updateEmergency = preparedQuery((db, p) =>
  db
    .updateTable('emergencies')
    .set({
      status: p('status'),
      category_id: p('category_id'),
      sequence: p('sequence'),
      updated_at: p('updated_at'),
      record: p('record'),
      record_sequence: p('record_sequence'),
    })
    .where('org_id', '=', p('org_id'))
    .where('id', '=', p('id')),
);

const insertResolution = preparedInsert('emergency_resolutions');
const insertAudit = preparedInsert('audit_logs');
const insertMessage = preparedInsert('messages');
const insertAttachment = preparedInsert('attachments');
const insertDedupe = preparedInsert('message_dedupe');
const insertDeadline = preparedInsert('ack_deadlines');
const insertEvent = preparedInsert('events');

const emergencyForChange = preparedQuery((db, p) =>
  db
    .selectFrom('emergencies')
    .select(['id', 'org_id', 'status', 'category_id', 'sequence', 'record'])
    .where('org_id', '=', p('org_id'))
    .where('id', '=', p('id')),
);

/** SQLite transactions run one at a time under the write lock, so reading the row is locking it. */
export async function lockEmergency(connection: JobConnection, orgId: string, id: string): Promise<LockedEmergency | undefined> {
  const [row] = await emergencyForChange.execute(connection, { org_id: orgId, id });
  return row as LockedEmergency | undefined;
}

/** Sends a job's recorded writes inside its savepoint, events numbered by the batch's offsets; returns each org's last offset. */
export function sendWrites(connection: JobConnection, writes: WriteSet, offsets: BatchEventOffsets): CommittedEvent[] {
  for (const row of writes.emergencyInserts) insertEmergency.runNow(connection, { ...row });
  for (const { orgId, id, change } of writes.emergencyChanges) updateEmergency.runNow(connection, { ...change, org_id: orgId, id });
  for (const row of writes.resolutionRows) insertResolution.runNow(connection, { ...row });
  for (const row of writes.messageRows) insertMessage.runNow(connection, { ...row });
  for (const row of writes.attachmentRows) insertAttachment.runNow(connection, { ...row });
  for (const row of writes.dedupeRows) insertDedupe.runNow(connection, { ...row });
  for (const row of writes.auditRows) insertAudit.runNow(connection, { ...row });
  for (const row of writes.deadlineRows) insertDeadline.runNow(connection, { ...row });
  const committed: CommittedEvent[] = [];
  for (const [orgId, events] of writes.eventsByOrg()) {
    let offset = 0;
    for (const event of events) {
      const next = offsets.next(orgId);
      if (next === null) throw new Error(`Organization ${orgId} does not exist.`);
      insertEvent.runNow(connection, { ...event, stream_offset: next });
      offset = next;
    }
    committed.push({ orgId, offset, written: events });
  }
  return committed;
}

const insertAnswer = preparedInsert('idempotency_keys');

/** Stores a job's answer in its savepoint; a key another request committed first fails the job whole. */
export function storeAnswer(connection: JobConnection, answer: IdempotencyKeyTable): void {
  try {
    insertAnswer.runNow(connection, { ...answer });
  } catch (err) {
    if (isIdempotencyKeyConflict(err)) throw new IdempotencyKeyTaken(answer.api_key_id, answer.idem_key);
    throw err;
  }
}
