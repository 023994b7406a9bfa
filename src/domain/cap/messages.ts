import { EMERGENCY_RESOLVED } from '../../log/event-types.js';
import type { EmergencyRecord } from '../emergencies/schema.js';
import { type IngestedMessage, ingestedMessagesOf, referenceOf } from './chain.js';
import { capAreaOf, capCategoryOf, capSeverityOf, capTime } from './export-mapping.js';
import { type CapElement, originalReferences, type RelayedAlert } from './relay-alert.js';
import type { CapTransition, EmergencyForCap } from './repo.js';
import type { CapMsgType, OutgoingAlert } from './write-alert.js';

/**
 * An emergency as CAP messages. Each transition is one message, its identifier `<emergencyId>.<sequence>` (the event's
 * sequence: the declare is `.1`), sent when the event was written: declared → Alert, re-categorized → Update, resolved →
 * Cancel. The latest is the emergency's document; it names every earlier one, and every ingested message, in `references`.
 */

/** The sender of an organization's alerts: stable, unique, and free of spaces and commas as CAP requires. */
export function capSenderOf(orgId: string): string {
  return `urn:uuid:${orgId}`;
}

export function capIdentifierOf(emergencyId: string, sequence: number): string {
  return `${emergencyId}.${sequence}`;
}

/** The emergency id a message identifier of this service names (`<uuid>.<n>`), or null. */
export function emergencyIdOfIdentifier(identifier: string): string | null {
  const m = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.[1-9]\d{0,9}$/i.exec(identifier);
  return m ? m[1]!.toLowerCase() : null;
}

interface CapMessage {
  identifier: string;
  sequence: number;
  sent: string;
  msgType: CapMsgType;
}

const MSG_TYPE_OF_STATUS: Record<EmergencyRecord['status'], CapMsgType> = { declared: 'Alert', categorized: 'Update', resolved: 'Cancel' };

/**
 * The emergency's messages, oldest first. The declare's is known from the record; when retention has removed the event of the
 * latest transition, its message is dated by the emergency's last change.
 */
function messagesOf(emergency: EmergencyRecord, row: EmergencyForCap, transitions: CapTransition[]): CapMessage[] {
  const messages: CapMessage[] = [{ identifier: capIdentifierOf(emergency.emergencyId, 1), sequence: 1, sent: emergency.createdAt, msgType: 'Alert' }];
  for (const t of transitions) {
    messages.push({
      identifier: capIdentifierOf(emergency.emergencyId, t.sequence),
      sequence: t.sequence,
      sent: t.created_at,
      msgType: t.event_type === EMERGENCY_RESOLVED ? 'Cancel' : 'Update',
    });
  }
  const current = MSG_TYPE_OF_STATUS[emergency.status];
  if (messages.at(-1)!.msgType !== current) {
    messages.push({ identifier: capIdentifierOf(emergency.emergencyId, row.sequence), sequence: row.sequence, sent: row.updated_at, msgType: current });
  }
  return messages;
}

/**
 * The emergency's latest state as a CAP alert. `original` holds the elements of its latest ingested message, when the
 * emergency was ingested and that message is kept: the alert then relays it (see relayOf).
 */
export function currentAlert(
  emergency: EmergencyRecord,
  row: EmergencyForCap,
  transitions: CapTransition[],
  orgName: string,
  original: CapElement[] | null = null,
): OutgoingAlert {
  const sender = capSenderOf(emergency.orgId);
  const messages = messagesOf(emergency, row, transitions);
  const current = messages.at(-1)!;
  const ingested = ingestedMessagesOf(emergency);
  const own = messages.slice(0, -1).map((m) => `${sender},${m.identifier},${capTime(m.sent)}`);
  const references = [...ingested.map(referenceOf), ...own];
  const resolved = emergency.status === 'resolved';
  const parameters: [string, string][] = [['emergencyId', emergency.emergencyId]];
  if (emergency.externalId !== null) parameters.push(['externalId', emergency.externalId]);
  return {
    identifier: current.identifier,
    sender,
    sent: capTime(current.sent),
    status: emergency.exercise === true ? 'Exercise' : 'Actual',
    msgType: current.msgType,
    note: resolved ? emergency.resolutionNote : null,
    references: references.length > 0 ? references.join(' ') : null,
    incidents: emergency.emergencyId,
    info: {
      category: capCategoryOf(emergency.category.name),
      event: emergency.category.name,
      responseType: resolved ? 'AllClear' : null,
      severity: capSeverityOf(emergency.category.severity),
      onset: capTime(emergency.occurredAt),
      senderName: orgName,
      headline: resolved ? `${emergency.category.name}: resolved` : emergency.category.name,
      description: emergency.description,
      parameters,
      area: capAreaOf(emergency.location),
    },
    relay: original && ingested.length > 0 ? relayOf(emergency, current, ingested, own, original, sender) : null,
  };
}

/**
 * The relay of the latest ingested message: its elements as sent, under the service's identifier, sender and sent, its
 * `references` naming what the original named, every ingested message of the chain (the original among them) and the service's
 * earlier messages. When the service made the latest change itself (a resolve or re-categorization through the API), the
 * message is the service's Update or Cancel, still carrying the original's audience and info blocks, with the resolution's note.
 */
function relayOf(
  emergency: EmergencyRecord,
  current: CapMessage,
  ingested: IngestedMessage[],
  own: string[],
  original: CapElement[],
  sender: string,
): RelayedAlert {
  const latest = ingested.at(-1)!;
  const byService = latest.sequence !== current.sequence;
  const references = [...new Set([...originalReferences(original), ...ingested.map(referenceOf), ...own])];
  return {
    identifier: current.identifier,
    sender,
    sent: capTime(current.sent),
    msgType: byService ? current.msgType : null,
    ...(byService && emergency.status === 'resolved' ? { note: emergency.resolutionNote } : {}),
    references: references.length > 0 ? references.join(' ') : null,
    elements: original,
  };
}

/** The ingested message whose document the export relays: the latest of the emergency's chain; null for any other emergency. */
export function relayedMessageOf(emergency: EmergencyRecord): IngestedMessage | null {
  return ingestedMessagesOf(emergency).at(-1) ?? null;
}
