import type { Tx } from '../db/connect.js';
import type { OrgTable } from '../db/types.js';
import { nowIso } from '../domain/shared/ids.js';
import type { EventType } from './event-types.js';

export const API_VERSION = '1.0.0';

export interface EventEnvelope {
  eventId: string;
  eventType: string;
  apiVersion: string;
  createdAt: string;
  orgId: string;
  emergencyId: string;
  sequence: number;
  /** Only on a sandbox instance (extensions §11): every consumer of the event can tell it is not live. */
  sandbox?: true;
  data: Record<string, unknown>;
}

export interface EventInput {
  eventId: string;
  orgId: string;
  emergencyId: string;
  eventType: EventType;
  sequence: number;
  data: Record<string, unknown>;
  /** `data` already encoded as JSON, when the caller has it: the payload embeds it as is. */
  dataJson?: string;
  /** The event's creation time; now unless given. */
  createdAt?: string;
  /** Appended by a sandbox instance: the envelope says so. */
  sandbox?: boolean;
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
    ...(input.sandbox ? { sandbox: true as const } : {}),
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
 * Records an event in the unit of work of the state change it describes. The storage gives it the
 * org's next stream offset when it is written (offsets of one org commit in increasing order with no
 * gap, so a reader resuming "after N" can never skip one) and wakes the stream's readers once committed.
 */
export function appendEvent(tx: Pick<Tx, 'events'>, input: EventInput): EventEnvelope {
  const { envelope, row } = eventRow(input);
  tx.events.append(row);
  return envelope;
}

/** The stream columns of a new org's row: its stream starts empty, with nothing removed. */
export function newStreamColumns(): Pick<OrgTable, 'event_offset' | 'pruned_offset'> {
  return { event_offset: 0, pruned_offset: 0 };
}
