import { EMERGENCY_RESOLVED } from '../../log/event-types.js';
import type { EmergencyRecord } from '../emergencies/schema.js';
import { capAreaOf, capCategoryOf, capSeverityOf, capTime } from './export-mapping.js';
import type { CapTransition, EmergencyForCap } from './repo.js';
import type { CapMsgType, OutgoingAlert } from './write-alert.js';

/**
 * An emergency as CAP messages. Each transition is one message, its identifier `<emergencyId>.<sequence>` (the event's
 * sequence: the declare is `.1`), sent when the event was written: declared → Alert, re-categorized → Update, resolved →
 * Cancel. The latest is the emergency's document; it names every earlier one in `references`.
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
  sent: string;
  msgType: CapMsgType;
}

const MSG_TYPE_OF_STATUS: Record<EmergencyRecord['status'], CapMsgType> = { declared: 'Alert', categorized: 'Update', resolved: 'Cancel' };

/**
 * The emergency's messages, oldest first. The declare's is known from the record; when retention has removed the event of the
 * latest transition, its message is dated by the emergency's last change.
 */
function messagesOf(emergency: EmergencyRecord, row: EmergencyForCap, transitions: CapTransition[]): CapMessage[] {
  const messages: CapMessage[] = [{ identifier: capIdentifierOf(emergency.emergencyId, 1), sent: emergency.createdAt, msgType: 'Alert' }];
  for (const t of transitions) {
    messages.push({
      identifier: capIdentifierOf(emergency.emergencyId, t.sequence),
      sent: t.created_at,
      msgType: t.event_type === EMERGENCY_RESOLVED ? 'Cancel' : 'Update',
    });
  }
  const current = MSG_TYPE_OF_STATUS[emergency.status];
  if (messages.at(-1)!.msgType !== current) {
    messages.push({ identifier: capIdentifierOf(emergency.emergencyId, row.sequence), sent: row.updated_at, msgType: current });
  }
  return messages;
}

/** A CAP token of an alert ingested from another system (see ingest): no white space, comma, `<` or `&`. */
const CAP_TOKEN = /^[^\s,<&]{1,256}$/;
const CAP_SENT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[-+]\d{2}:\d{2}$/;

/** The message an ingested emergency came from (`metadata.cap`), as a reference; null for any other emergency. */
function originOf(emergency: EmergencyRecord): string | null {
  const cap = emergency.metadata?.cap as { sender?: unknown; identifier?: unknown; sent?: unknown } | undefined;
  if (!cap || typeof cap !== 'object') return null;
  const { sender, identifier, sent } = cap;
  if (typeof sender !== 'string' || typeof identifier !== 'string' || typeof sent !== 'string') return null;
  return CAP_TOKEN.test(sender) && CAP_TOKEN.test(identifier) && CAP_SENT.test(sent) ? `${sender},${identifier},${sent}` : null;
}

/** The emergency's latest state as a CAP alert. */
export function currentAlert(emergency: EmergencyRecord, row: EmergencyForCap, transitions: CapTransition[], orgName: string): OutgoingAlert {
  const sender = capSenderOf(emergency.orgId);
  const messages = messagesOf(emergency, row, transitions);
  const current = messages.at(-1)!;
  const origin = originOf(emergency);
  const references = [...(origin ? [origin] : []), ...messages.slice(0, -1).map((m) => `${sender},${m.identifier},${capTime(m.sent)}`)];
  const resolved = emergency.status === 'resolved';
  const parameters: [string, string][] = [['emergencyId', emergency.emergencyId]];
  if (emergency.externalId !== null) parameters.push(['externalId', emergency.externalId]);
  return {
    identifier: current.identifier,
    sender,
    sent: capTime(current.sent),
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
  };
}
