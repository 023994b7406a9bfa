import { sql } from 'kysely';
import type { Tx } from '../../db/connect.js';
import { preparedQuery } from '../../db/prepared.js';
import { nowIso } from '../shared/ids.js';
import { type EventBus, PG_EVENT_CHANNEL } from './bus.js';

export const API_VERSION = '1.0.0';

export type EmergencyEventType = 'emergency.declared' | 'emergency.categorized' | 'emergency.resolved';

export interface EventEnvelope {
  eventId: string;
  eventType: string;
  apiVersion: string;
  createdAt: string;
  orgId: string;
  emergencyId: string;
  sequence: number;
  data: Record<string, unknown>;
}

const insertEvent = preparedQuery((db, p) =>
  db.insertInto('events').values({
    id: p('id'),
    org_id: p('org_id'),
    stream_offset: p('stream_offset'),
    emergency_id: p('emergency_id'),
    event_type: p('event_type'),
    sequence: p('sequence'),
    payload: p('payload'),
    created_at: p('created_at'),
  }),
);

// PostgreSQL: offset (the org row lock, held to commit), event row and wake-up in one statement, so
// the row stays locked for one round trip plus the commit. The notification is delivered only if and
// when the transaction commits.
const appendEventPg = preparedQuery((db, p) =>
  sql<{ stream_offset: number }>`
    with bumped as (
      update orgs set event_offset = event_offset + 1 where id = ${p('org_id')} returning event_offset
    ), inserted as (
      insert into events (id, org_id, stream_offset, emergency_id, event_type, sequence, payload, created_at)
      select ${p('id')}, ${p('org_id')}, event_offset, ${p('emergency_id')}, ${p('event_type')}, ${p('sequence')}::integer, ${p('payload')}, ${p('created_at')}
      from bumped
      returning stream_offset
    )
    select stream_offset, pg_notify(${PG_EVENT_CHANNEL}, json_build_object('orgId', ${p('org_id')}::text, 'offset', stream_offset)::text)
    from inserted`.compile(db),
);

export interface EventInput {
  eventId: string;
  orgId: string;
  emergencyId: string;
  eventType: EmergencyEventType;
  sequence: number;
  data: Record<string, unknown>;
  /** `data` already encoded as JSON, when the caller has it: the payload embeds it as is. */
  dataJson?: string;
  /** The event's creation time; now unless given. */
  createdAt?: string;
}

/** The envelope as JSON with its data (its last member) spliced in already encoded. */
function withData(envelope: EventEnvelope, dataJson: string): string {
  const { data: _data, ...head } = envelope;
  const headJson = JSON.stringify(head);
  return `${headJson.slice(0, -1)},"data":${dataJson}}`;
}

/** The envelope of an event and its row without the stream offset (assigned when it is written). */
export function eventRow(input: EventInput) {
  const envelope: EventEnvelope = {
    eventId: input.eventId,
    eventType: input.eventType,
    apiVersion: API_VERSION,
    createdAt: input.createdAt ?? nowIso(),
    orgId: input.orgId,
    emergencyId: input.emergencyId,
    sequence: input.sequence,
    data: input.data,
  };
  const row = {
    id: envelope.eventId,
    org_id: input.orgId,
    emergency_id: input.emergencyId,
    event_type: input.eventType,
    sequence: input.sequence,
    payload: input.dataJson === undefined ? JSON.stringify(envelope) : withData(envelope, input.dataJson),
    created_at: envelope.createdAt,
  };
  return { envelope, row };
}

/**
 * Writes an event in the transaction of the state change it describes. Offsets of one org commit in
 * increasing order with no gap, so a reader resuming "after N" can never skip one. On PostgreSQL the
 * offset is taken by incrementing the org row, which holds that row's lock until commit (callers write
 * the event last in their transaction for that reason); on SQLite, whose transactions all run
 * through group commit under the write lock, the batch counts the offsets (BatchEventOffsets).
 */
export async function appendEvent(
  tx: Tx,
  bus: EventBus,
  input: EventInput,
): Promise<EventEnvelope> {
  const { envelope, row } = eventRow(input);
  let offset: number;
  if (tx.dialect === 'postgres') {
    const [appended] = await appendEventPg.execute(tx, row);
    if (!appended) throw new Error(`Organization ${input.orgId} does not exist.`);
    offset = Number(appended.stream_offset);
  } else {
    if (!tx.eventOffsets) throw new Error('SQLite events are written only in group-commit transactions.');
    const next = tx.eventOffsets.next(input.orgId);
    if (next === null) throw new Error(`Organization ${input.orgId} does not exist.`);
    offset = next;
    await insertEvent.execute(tx, { ...row, stream_offset: offset });
  }
  tx.afterCommit(() => bus.committed({ orgId: input.orgId, offset }));
  return envelope;
}
