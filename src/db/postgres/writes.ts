import { type Kysely, sql } from 'kysely';
import { preparedQuery } from '../prepared.js';
import type { Database } from '../types.js';
import type { CommittedEvent, LockedEmergency, WriteSet } from '../unit-of-work.js';
import { appendedEventsResult, appendEventsCtes, eventColumns } from './events.js';

const appendEvents = preparedQuery((db, p) => sql<{ last_offset: string | number }>`with ${appendEventsCtes(p)} ${appendedEventsResult}`.compile(db));

/** The emergency row locked until the commit, so concurrent transitions of one emergency run one after another. */
export function lockEmergency(trx: Kysely<Database>, orgId: string, id: string): Promise<LockedEmergency | undefined> {
  return trx
    .selectFrom('emergencies')
    .select(['id', 'org_id', 'status', 'category_id', 'sequence', 'record'])
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst() as Promise<LockedEmergency | undefined>;
}

/** Sends a unit's recorded writes inside its transaction; returns the last offset written per org. */
export async function sendWrites(trx: Kysely<Database>, writes: WriteSet): Promise<CommittedEvent[]> {
  if (writes.emergencyInserts.length > 0) {
    await trx.insertInto('emergencies').values(writes.emergencyInserts).execute();
  }
  for (const { orgId, id, change } of writes.emergencyChanges) {
    await trx.updateTable('emergencies').set(change).where('org_id', '=', orgId).where('id', '=', id).execute();
  }
  if (writes.resolutionRows.length > 0) await trx.insertInto('emergency_resolutions').values(writes.resolutionRows).execute();
  if (writes.messageRows.length > 0) await trx.insertInto('messages').values(writes.messageRows).execute();
  if (writes.attachmentRows.length > 0) await trx.insertInto('attachments').values(writes.attachmentRows).execute();
  if (writes.dedupeRows.length > 0) await trx.insertInto('message_dedupe').values(writes.dedupeRows).execute();
  if (writes.auditRows.length > 0) await trx.insertInto('audit_logs').values(writes.auditRows).execute();
  if (writes.deadlineRows.length > 0) await trx.insertInto('ack_deadlines').values(writes.deadlineRows).execute();
  const committed: CommittedEvent[] = [];
  for (const [orgId, events] of writes.eventsByOrg()) {
    const query = appendEvents.bind({ db: trx, dialect: 'postgres' }, { org_id: orgId, ...eventColumns(events) });
    const [result] = (await trx.executeQuery(query)).rows;
    if (!result) throw new Error(`Organization ${orgId} does not exist.`);
    committed.push({ orgId, offset: Number(result.last_offset), written: events });
  }
  return committed;
}
