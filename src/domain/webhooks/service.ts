import type { AppContext } from '../../context.js';
import { inTransaction, type Tx } from '../../db/connect.js';
import type { WebhookSubscriptionTable } from '../../db/types.js';
import type { Caller } from '../access/principal.js';
import { recordAudit } from '../audit/record.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import { fromJson, toJson } from '../shared/json.js';
import { coveredOrgIds, findSubscription, pendingDelivery } from './repo.js';
import { type SubscriptionRecord, type SubscriptionSpec, toSubscriptionRecord, WEBHOOK_EVENT_TYPES } from './schema.js';
import { mintWebhookSecret } from './signing.js';
import { checkWebhookUrl } from '../outbound/webhook-url.js';

export const SECRET_ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;
/** Upper bound of one replay command; the operator continues with the returned `nextSince`. */
export const REPLAY_MAX_EVENTS = 10_000;

/** The caller recorded in the audit log when the delivery worker itself disables a subscription. */
export const dispatcherCaller = (): Caller => ({ principal: { kind: 'operator', name: 'webhook dispatcher' }, requestId: null });

/** Writes one `webhook.*` audit entry in every organization the subscription covers. */
async function auditWebhookEvent(tx: Tx, caller: Caller, row: WebhookSubscriptionTable, eventType: string, details: Record<string, unknown> = {}) {
  for (const orgId of await coveredOrgIds(tx.db, row.subject_type, row.subject_id, fromJson<string[]>(row.allowed_org_ids))) {
    recordAudit(tx, caller, {
      orgId,
      eventCategory: 'webhook',
      eventType,
      resource: { type: 'webhook_subscription', id: row.id },
      // The URL's origin only: subscribers sometimes put tokens in the path or query.
      details: { origin: new URL(row.url).origin, ...details },
    });
  }
}

async function assertSubjectExists(tx: Tx, subjectType: string, subjectId: string): Promise<void> {
  const table = subjectType === 'org' ? 'orgs' : subjectType === 'enterprise' ? 'enterprises' : 'partners';
  const found = await tx.db.selectFrom(table).select('id').where('id', '=', subjectId).executeTakeFirst();
  if (!found) throw new Error(`No ${subjectType} with id ${subjectId}.`);
}

async function loadSubscription(tx: Tx, id: string): Promise<WebhookSubscriptionTable> {
  const row = isUuid(id) ? await findSubscription(tx.db, id) : undefined;
  if (!row) throw new Error(`No webhook subscription with id ${id}.`);
  return row;
}

function validateSpec(ctx: AppContext, spec: SubscriptionSpec): string {
  const checked = checkWebhookUrl(spec.url, ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS);
  if (!checked.ok) throw new Error(`Invalid webhook URL: ${checked.reason.replace(/\.$/, '')}.`);
  for (const t of spec.eventTypes ?? []) {
    if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t)) {
      throw new Error(`Unknown event type "${t}"; expected ${WEBHOOK_EVENT_TYPES.join(', ')}.`);
    }
  }
  if (spec.eventTypes && spec.eventTypes.length === 0) throw new Error('The event-type filter must name at least one event type.');
  return checked.url;
}

/** Registers a subscription; the secret is returned here and never shown again. */
export async function createSubscription(
  ctx: AppContext,
  caller: Caller,
  spec: SubscriptionSpec,
): Promise<{ id: string; secret: string; record: SubscriptionRecord }> {
  const url = validateSpec(ctx, spec);
  return inTransaction(ctx.db, async (tx) => {
    await assertSubjectExists(tx, spec.subjectType, spec.subjectId);
    const now = nowIso();
    const row: WebhookSubscriptionTable = {
      id: newId(),
      subject_type: spec.subjectType,
      subject_id: spec.subjectId,
      allowed_org_ids: toJson(spec.allowedOrgIds ?? null),
      url,
      event_types: toJson(spec.eventTypes ? [...new Set(spec.eventTypes)] : null),
      secret: mintWebhookSecret(),
      previous_secret: null,
      previous_secret_expires_at: null,
      status: 'active',
      disabled_reason: null,
      failing_since: null,
      created_at: now,
      updated_at: now,
    };
    await tx.db.insertInto('webhook_subscriptions').values(row).execute();
    await auditWebhookEvent(tx, caller, row, 'webhook.created', {
      subject: { type: row.subject_type, id: row.subject_id },
      eventTypes: fromJson(row.event_types),
    });
    return { id: row.id, secret: row.secret, record: toSubscriptionRecord(row) };
  });
}

export async function listSubscriptions(ctx: AppContext): Promise<SubscriptionRecord[]> {
  const rows = await ctx.db.db.selectFrom('webhook_subscriptions').selectAll().orderBy('created_at').orderBy('id').execute();
  return rows.map(toSubscriptionRecord);
}

export async function getSubscription(ctx: AppContext, id: string): Promise<SubscriptionRecord> {
  return inTransaction(ctx.db, async (tx) => toSubscriptionRecord(await loadSubscription(tx, id)));
}

/**
 * Disables or re-enables a subscription. While disabled nothing new is queued for it and queued
 * deliveries wait; re-enabling resumes them (events from the disabled period can be replayed).
 */
export async function setSubscriptionStatus(
  ctx: AppContext,
  caller: Caller,
  id: string,
  status: 'active' | 'disabled',
  reason: string | null = null,
): Promise<SubscriptionRecord> {
  return inTransaction(ctx.db, async (tx) => disableOrEnable(tx, caller, await loadSubscription(tx, id), status, reason));
}

/** Shared by the operator commands and the dispatcher (410 Gone, five days of failures). */
export async function disableOrEnable(
  tx: Tx,
  caller: Caller,
  row: WebhookSubscriptionTable,
  status: 'active' | 'disabled',
  reason: string | null,
): Promise<SubscriptionRecord> {
  if (row.status === status) return toSubscriptionRecord(row);
  const now = nowIso();
  const changes = { status, disabled_reason: status === 'disabled' ? reason : null, failing_since: null, updated_at: now };
  await tx.db.updateTable('webhook_subscriptions').set(changes).where('id', '=', row.id).execute();
  await auditWebhookEvent(tx, caller, row, status === 'disabled' ? 'webhook.disabled' : 'webhook.enabled', reason ? { reason } : {});
  return toSubscriptionRecord({ ...row, ...changes });
}

/** New secret at once; the previous one keeps signing (alongside) for the grace period. */
export async function rotateSubscriptionSecret(
  ctx: AppContext,
  caller: Caller,
  id: string,
  graceMs = SECRET_ROTATION_GRACE_MS,
): Promise<{ id: string; secret: string; previousSecretExpiresAt: string }> {
  return inTransaction(ctx.db, async (tx) => {
    const row = await loadSubscription(tx, id);
    const secret = mintWebhookSecret();
    const expiresAt = new Date(Date.now() + graceMs).toISOString();
    await tx.db
      .updateTable('webhook_subscriptions')
      .set({ secret, previous_secret: row.secret, previous_secret_expires_at: expiresAt, updated_at: nowIso() })
      .where('id', '=', row.id)
      .execute();
    await auditWebhookEvent(tx, caller, row, 'webhook.secret_rotated', { previousSecretExpiresAt: expiresAt });
    return { id: row.id, secret, previousSecretExpiresAt: expiresAt };
  });
}

/** Removes the subscription with its queue and delivery log. */
export async function deleteSubscription(ctx: AppContext, caller: Caller, id: string): Promise<{ id: string; deleted: true }> {
  return inTransaction(ctx.db, async (tx) => {
    const row = await loadSubscription(tx, id);
    await auditWebhookEvent(tx, caller, row, 'webhook.deleted');
    await tx.db.deleteFrom('webhook_attempts').where('subscription_id', '=', row.id).execute();
    await tx.db.deleteFrom('webhook_deliveries').where('subscription_id', '=', row.id).execute();
    await tx.db.deleteFrom('webhook_subscriptions').where('id', '=', row.id).execute();
    return { id: row.id, deleted: true as const };
  });
}

export interface AttemptView {
  attemptId: string;
  deliveryId: string;
  eventId: string;
  eventType: string;
  orgId: string | null;
  attempt: number;
  startedAt: string;
  outcome: string;
  latencyMs: number;
  responseCode: number | null;
  error: string | null;
  responseBody: string | null;
}

/** Recent attempts (newest first) and the state of the subscription's queue. */
export async function listDeliveryAttempts(
  ctx: AppContext,
  id: string,
  limit = 50,
): Promise<{ subscriptionId: string; status: string; queue: Record<string, number>; items: AttemptView[] }> {
  return inTransaction(ctx.db, async (tx) => {
    const row = await loadSubscription(tx, id);
    const counts = await tx.db
      .selectFrom('webhook_deliveries')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('subscription_id', '=', row.id)
      .groupBy('status')
      .execute();
    const attempts = await tx.db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('subscription_id', '=', row.id)
      .orderBy('started_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return {
      subscriptionId: row.id,
      status: row.status,
      queue: Object.fromEntries(['pending', 'delivered', 'failed'].map((s) => [s, Number(counts.find((c) => c.status === s)?.n ?? 0)])),
      items: attempts.map((a) => ({
        attemptId: a.id,
        deliveryId: a.delivery_id,
        eventId: a.event_id,
        eventType: a.event_type,
        orgId: a.org_id,
        attempt: a.attempt_number,
        startedAt: a.started_at,
        outcome: a.outcome,
        latencyMs: a.duration_ms,
        responseCode: a.response_code,
        error: a.error,
        responseBody: a.response_body,
      })),
    };
  });
}

/**
 * Queues again, for immediate delivery, every event since `since` that the subscription covers
 * (already delivered ones included: receivers deduplicate on eventId). Resets their retry count.
 */
export async function replayDeliveries(
  ctx: AppContext,
  caller: Caller,
  id: string,
  since: string,
): Promise<{ id: string; requeued: number; truncated: boolean; nextSince: string | null }> {
  return inTransaction(ctx.db, async (tx) => {
    const row = await loadSubscription(tx, id);
    const orgIds = await coveredOrgIds(tx.db, row.subject_type, row.subject_id, fromJson<string[]>(row.allowed_org_ids));
    const types = fromJson<string[]>(row.event_types);
    const now = nowIso();
    let requeued = 0;
    let truncated = false;
    let nextSince: string | null = null;
    for (const orgId of orgIds) {
      let query = tx.db
        .selectFrom('events')
        .select(['id', 'event_type', 'created_at'])
        .where('org_id', '=', orgId)
        .where('created_at', '>=', since)
        .orderBy('stream_offset')
        .limit(REPLAY_MAX_EVENTS - requeued + 1);
      if (types) query = query.where('event_type', 'in', types);
      const events = await query.execute();
      if (requeued + events.length > REPLAY_MAX_EVENTS) {
        truncated = true;
        events.length = REPLAY_MAX_EVENTS - requeued;
      }
      for (const event of events) {
        // Same (subscription, event) pair as the original delivery: its eventId, hence its webhook-id, is unchanged.
        await tx.db
          .insertInto('webhook_deliveries')
          .values(pendingDelivery(row.id, orgId, event, now))
          .onConflict((oc) =>
            oc.columns(['subscription_id', 'event_id']).doUpdateSet({
              status: 'pending',
              attempt_count: 0,
              next_attempt_at: now,
              claimed_until: null,
              claimed_by: null,
              updated_at: now,
              completed_at: null,
            }),
          )
          .execute();
        requeued++;
        nextSince = event.created_at;
      }
      if (truncated) break;
    }
    for (const orgId of orgIds) {
      // One audit entry per org concerned, even when nothing of that org was re-queued.
      recordAudit(tx, caller, {
        orgId,
        eventCategory: 'webhook',
        eventType: 'webhook.replayed',
        resource: { type: 'webhook_subscription', id: row.id },
        details: { since, requeued },
      });
    }
    return { id: row.id, requeued, truncated, nextSince: truncated ? nextSince : null };
  });
}
