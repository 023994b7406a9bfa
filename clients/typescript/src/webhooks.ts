import { Webhook } from 'standardwebhooks';
import type { components } from './schema.js';

export type Emergency = components['schemas']['Emergency'];
export type DeliveryOverdueData = components['schemas']['DeliveryOverdueData'];
export type DeliveryCompletedData = components['schemas']['DeliveryCompletedData'];
export type DrillCompletedData = components['schemas']['DrillCompletedData'];

type Envelope = Omit<components['schemas']['EventEnvelope'], 'eventType' | 'data'>;
type DeadlineEventType = 'emergency.delivery_overdue' | 'emergency.delivery_completed';
type DrillEventType = 'drill.completed';

/** An emergency transition (declared, categorized, resolved): `data.emergency` is the emergency after the change. */
export type EmergencyChangeEvent = Envelope & {
  eventType: Exclude<components['schemas']['EventEnvelope']['eventType'], DeadlineEventType | DrillEventType>;
  /** The emergency after the change; `exercise`: true for an exercise (a drill), to be shown as such, never as a real alarm. */
  data: { emergency: Emergency; exercise: boolean };
};

/** Base stations did not acknowledge an event of the emergency by its acknowledgement deadline: `data` names them. */
export type DeliveryOverdueEvent = Envelope & { eventType: 'emergency.delivery_overdue'; data: DeliveryOverdueData };

/** Every base station an overdue event targets has acknowledged it since. */
export type DeliveryCompletedEvent = Envelope & { eventType: 'emergency.delivery_completed'; data: DeliveryCompletedData };

/** A drill's run ended: `data` is its report (acknowledgements, silent stations, webhooks); its emergency is an exercise. */
export type DrillCompletedEvent = Envelope & { eventType: 'drill.completed'; data: DrillCompletedData };

/**
 * An event of an emergency's timeline, as webhooks, the event feed and device streams deliver it: narrow on
 * `eventType` to read `data` (only transitions carry `data.emergency`).
 */
export type EmergencyEvent = EmergencyChangeEvent | DeliveryOverdueEvent | DeliveryCompletedEvent | DrillCompletedEvent;

/** `webhook.ping`, sent by `admin webhook test` (POST /webhooks/{id}/test on the admin API). */
export interface WebhookPing {
  eventId: string;
  eventType: 'webhook.ping';
  apiVersion: string;
  createdAt: string;
  data: { subscriptionId: string };
}

export type WebhookEvent = EmergencyEvent | WebhookPing;

/** Thrown by verifyWebhook: the request is not a genuine, fresh delivery of this subscription. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

/** Request headers as Node (`req.headers`), fetch (`Headers`) or a plain object give them; names are case-insensitive. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const REQUIRED = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

function standardHeaders(headers: WebhookHeaders): Record<(typeof REQUIRED)[number], string> {
  const lower = new Map<string, string>();
  if (typeof Headers !== 'undefined' && headers instanceof Headers) {
    for (const [name, value] of headers) lower.set(name.toLowerCase(), value);
  } else {
    for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
      if (value !== undefined) lower.set(name.toLowerCase(), Array.isArray(value) ? value.join(' ') : value);
    }
  }
  const missing = REQUIRED.filter((name) => !lower.get(name));
  if (missing.length > 0) throw new WebhookVerificationError(`missing header${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
  return { 'webhook-id': lower.get('webhook-id')!, 'webhook-timestamp': lower.get('webhook-timestamp')!, 'webhook-signature': lower.get('webhook-signature')! };
}

/**
 * Verifies a webhook delivery per Standard Webhooks and returns its parsed event. `rawBody` must be
 * the request body exactly as received (before any JSON parsing); `secret` is the subscription's
 * `whsec_…` secret. Throws WebhookVerificationError when a header is missing, the signature does not
 * match (a tampered body, another secret), the timestamp is more than 5 minutes off, or the body is
 * not an event. Deliveries are at least once: deduplicate on `eventId`.
 */
export function verifyWebhook(rawBody: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent {
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  const wanted = standardHeaders(headers);
  let verifier: Webhook;
  try {
    verifier = new Webhook(secret);
  } catch (err) {
    throw new WebhookVerificationError(`invalid webhook secret (expected whsec_ followed by base64): ${(err as Error).message}`);
  }
  try {
    verifier.verify(body, wanted, { jsonParse: false });
  } catch (err) {
    const reason = (err as Error).message;
    if (/no matching signature/i.test(reason)) throw new WebhookVerificationError('signature mismatch: the body was altered or signed with another secret');
    if (/timestamp/i.test(reason)) throw new WebhookVerificationError(`stale or invalid webhook-timestamp: ${reason}`);
    throw new WebhookVerificationError(`verification failed: ${reason}`);
  }
  let event: unknown;
  try {
    event = JSON.parse(body);
  } catch {
    throw new WebhookVerificationError('the signed body is not JSON');
  }
  const { eventId, eventType } = (typeof event === 'object' && event !== null ? event : {}) as { eventId?: unknown; eventType?: unknown };
  if (typeof eventId !== 'string' || typeof eventType !== 'string')
    throw new WebhookVerificationError('the signed body is not an event (no eventId/eventType)');
  return event as WebhookEvent;
}
