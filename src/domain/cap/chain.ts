import type { EmergencyRecord } from '../emergencies/schema.js';

/**
 * The CAP messages ingested for an emergency, as its record keeps them in `metadata.cap`: the first one's `sender`,
 * `identifier`, `sent` and `event` at the top (the message the emergency came from), and `messages`, every ingested message
 * oldest first with the event `sequence` it became, so that the export names each one and relays the latest.
 */

export type IngestedMsgType = 'Alert' | 'Update' | 'Cancel';

export interface IngestedMessage {
  msgType: IngestedMsgType;
  sender: string;
  identifier: string;
  /** As written (CAP time, with its offset). */
  sent: string;
  /** The emergency's event this message became (the declare is 1). */
  sequence: number;
}

/** `metadata.cap` names at most this many messages (the latest): a long chain of Updates keeps the record small. */
export const MAX_INGESTED_MESSAGES = 32;

/** A CAP token of an ingested alert: no white space, comma, `<` or `&`. */
const CAP_TOKEN = /^[^\s,<&]{1,256}$/;
const CAP_SENT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[-+]\d{2}:\d{2}$/;
const MSG_TYPES = new Set(['Alert', 'Update', 'Cancel']);

/** `sender,identifier,sent`: how CAP's `references` names a message. */
export function referenceOf(message: { sender: string; identifier: string; sent: string }): string {
  return `${message.sender},${message.identifier},${message.sent}`;
}

/**
 * The ingested messages of an emergency, oldest first; empty for one that was never ingested. A record written before
 * `messages` existed names only the Alert it came from, at the top of `metadata.cap`. Entries that are not well-formed are
 * skipped: the metadata is data, and the export must stay valid CAP whatever it holds.
 */
export function ingestedMessagesOf(emergency: EmergencyRecord): IngestedMessage[] {
  const cap = emergency.metadata?.cap as Record<string, unknown> | undefined;
  if (!cap || typeof cap !== 'object') return [];
  if (Array.isArray(cap.messages)) return cap.messages.filter(isMessage);
  const origin = { msgType: 'Alert', sender: cap.sender, identifier: cap.identifier, sent: cap.sent, sequence: 1 };
  return isMessage(origin) ? [origin] : [];
}

function isMessage(value: unknown): value is IngestedMessage {
  if (value === null || typeof value !== 'object') return false;
  const m = value as Record<string, unknown>;
  return (
    typeof m.msgType === 'string' &&
    MSG_TYPES.has(m.msgType) &&
    typeof m.sender === 'string' &&
    CAP_TOKEN.test(m.sender) &&
    typeof m.identifier === 'string' &&
    CAP_TOKEN.test(m.identifier) &&
    typeof m.sent === 'string' &&
    CAP_SENT.test(m.sent) &&
    Number.isSafeInteger(m.sequence) &&
    (m.sequence as number) >= 1
  );
}

/**
 * The emergency's metadata once `message` is ingested: appended to `metadata.cap.messages` (the latest
 * MAX_INGESTED_MESSAGES kept), and the top of `metadata.cap` naming it when the emergency had no CAP origin yet.
 */
export function metadataWithMessage(
  metadata: EmergencyRecord['metadata'],
  message: IngestedMessage,
  event: string | null,
): NonNullable<EmergencyRecord['metadata']> {
  const current = metadata?.cap as Record<string, unknown> | undefined;
  const hasOrigin = current && typeof current === 'object' && typeof current.identifier === 'string';
  const earlier = hasOrigin ? ingestedMessagesOf({ metadata } as EmergencyRecord) : [];
  const top = hasOrigin ? current : { sender: message.sender, identifier: message.identifier, sent: message.sent, ...(event !== null ? { event } : {}) };
  return { ...metadata, cap: { ...top, messages: [...earlier, message].slice(-MAX_INGESTED_MESSAGES) } };
}
