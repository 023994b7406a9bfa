import type { WebhookSubscriptionTable } from '../../db/types.js';
import { EVENT_TYPES } from '../../log/event-types.js';
import { fromJson } from '../shared/json.js';

/** A subscription may filter on any event type of the org's stream. */
export const WEBHOOK_EVENT_TYPES = EVENT_TYPES;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
export const PING_EVENT_TYPE = 'webhook.ping';

export type SubscriptionStatus = 'active' | 'disabled';
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface SubscriptionSpec {
  subjectType: 'partner' | 'enterprise' | 'org';
  subjectId: string;
  allowedOrgIds?: string[] | null;
  url: string;
  eventTypes?: WebhookEventType[] | null;
}

/** What the operator sees of a subscription: everything but its secrets. */
export interface SubscriptionRecord {
  id: string;
  subject: { type: string; id: string };
  allowedOrgIds: string[] | null;
  url: string;
  eventTypes: string[] | null;
  status: string;
  disabledReason: string | null;
  failingSince: string | null;
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export function toSubscriptionRecord(row: WebhookSubscriptionTable): SubscriptionRecord {
  const graceOver = row.previous_secret_expires_at === null || Date.parse(row.previous_secret_expires_at) <= Date.now();
  return {
    id: row.id,
    subject: { type: row.subject_type, id: row.subject_id },
    allowedOrgIds: fromJson<string[]>(row.allowed_org_ids),
    url: row.url,
    eventTypes: fromJson<string[]>(row.event_types),
    status: row.status,
    disabledReason: row.disabled_reason,
    failingSince: row.failing_since,
    previousSecretExpiresAt: graceOver ? null : row.previous_secret_expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The secrets that sign a delivery now: the current one, plus the previous one during its grace period. */
export function signingSecrets(row: Pick<WebhookSubscriptionTable, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>, now = Date.now()): string[] {
  const secrets = [row.secret];
  if (row.previous_secret && row.previous_secret_expires_at && Date.parse(row.previous_secret_expires_at) > now) {
    secrets.push(row.previous_secret);
  }
  return secrets;
}
