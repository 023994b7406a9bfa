import { sql } from 'kysely';
import type { Tx } from '../../db/connect.js';
import { newId, nowIso } from '../shared/ids.js';
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

/**
 * Writes an event in the transaction of the state change it describes. The org's stream offset is
 * taken by incrementing the org row, which holds that row's lock until commit: offsets of one org
 * therefore commit in increasing order and a reader resuming "after N" can never skip one.
 */
export async function appendEvent(
  tx: Tx,
  bus: EventBus,
  input: { orgId: string; emergencyId: string; eventType: EmergencyEventType; sequence: number; data: Record<string, unknown> },
): Promise<EventEnvelope> {
  const bumped = await tx.db
    .updateTable('orgs')
    .set((eb) => ({ event_offset: eb('event_offset', '+', 1) }))
    .where('id', '=', input.orgId)
    .returning('event_offset')
    .executeTakeFirstOrThrow();
  const offset = Number(bumped.event_offset);
  const envelope: EventEnvelope = {
    eventId: newId(),
    eventType: input.eventType,
    apiVersion: API_VERSION,
    createdAt: nowIso(),
    orgId: input.orgId,
    emergencyId: input.emergencyId,
    sequence: input.sequence,
    data: input.data,
  };
  await tx.db
    .insertInto('events')
    .values({
      id: envelope.eventId,
      org_id: input.orgId,
      stream_offset: offset,
      emergency_id: input.emergencyId,
      event_type: input.eventType,
      sequence: input.sequence,
      payload: JSON.stringify(envelope),
      created_at: envelope.createdAt,
    })
    .execute();
  if (tx.dialect === 'postgres') {
    // Delivered by PostgreSQL only if and when this transaction commits: wakes other instances.
    await sql`select pg_notify(${PG_EVENT_CHANNEL}, ${JSON.stringify({ orgId: input.orgId, offset })})`.execute(tx.db);
  }
  tx.afterCommit(() => bus.committed({ orgId: input.orgId, offset }));
  return envelope;
}
