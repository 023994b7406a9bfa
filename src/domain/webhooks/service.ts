import type { AppContext } from '../../context.js';
import { inTransaction, type Tx } from '../../db/connect.js';
import type { WebhookSubscriptionTable } from '../../db/types.js';
import type { Caller } from '../access/principal.js';
import { recordAudit } from '../audit/record.js';
import { AppError } from '../../errors.js';
import { adminSubjectOf, requireReach } from '../access/admin-scope.js';
import { BY_CREATION, decodeCursor, keysetPage, paginate } from '../shared/cursor.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import type { Page } from '../shared/schema.js';
import { placeOfSubject, subjectWithin } from '../tenancy/places.js';
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

/** The subscription, when it exists and its subject lies within the caller's (else 404 / 403). */
export async function loadSubscription(tx: Pick<Tx, 'db'>, caller: Caller, id: string): Promise<WebhookSubscriptionTable> {
  const row = isUuid(id) ? await findSubscription(tx.db, id) : undefined;
  if (!row) throw new AppError('not_found', `No webhook subscription ${id}.`);
  requireReach(caller, await placeOfSubject(tx.db, row.subject_type as SubscriptionSpec['subjectType'], row.subject_id));
  return row;
}

function checkedUrl(ctx: AppContext, url: string): string {
  const checked = checkWebhookUrl(url, ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS);
  if (!checked.ok) throw new AppError('invalid_url', `Invalid webhook URL: ${checked.reason.replace(/\.$/, '')}.`);
  return checked.url;
}

function checkEventTypes(eventTypes: readonly string[] | null | undefined): void {
  for (const t of eventTypes ?? []) {
    if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t)) {
      throw new AppError('validation_error', `Unknown event type "${t}"; expected ${WEBHOOK_EVENT_TYPES.join(', ')}.`);
    }
  }
  if (eventTypes && eventTypes.length === 0) throw new AppError('validation_error', 'The event-type filter must name at least one event type.');
}

function validateSpec(ctx: AppContext, spec: SubscriptionSpec): string {
  const url = checkedUrl(ctx, spec.url);
  checkEventTypes(spec.eventTypes);
  return url;
}

/** Registers a subscription; the secret is returned here and never shown again. */
export async function createSubscription(
  ctx: AppContext,
  caller: Caller,
  spec: SubscriptionSpec,
): Promise<{ id: string; secret: string; record: SubscriptionRecord }> {
  const url = validateSpec(ctx, spec);
  return inTransaction(
    ctx.db,
    async (tx) => {
      requireReach(caller, await placeOfSubject(tx.db, spec.subjectType, spec.subjectId));
      const now = nowIso();
      const row: WebhookSubscriptionTable = {
        id: newId(),
        subject_type: spec.subjectType,
        subject_id: spec.subjectId.toLowerCase(),
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
    },
    caller.idempotency,
  );
}

/** Changes a subscription's URL, allowed orgs or event-type filter (null: every type / every org). */
export async function updateSubscription(
  ctx: AppContext,
  caller: Caller,
  id: string,
  changes: { url?: string; allowedOrgIds?: string[] | null; eventTypes?: SubscriptionSpec['eventTypes'] },
): Promise<SubscriptionRecord> {
  const url = changes.url === undefined ? undefined : checkedUrl(ctx, changes.url);
  checkEventTypes(changes.eventTypes);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row = await loadSubscription(tx, caller, id);
      const set = {
        ...(url !== undefined ? { url } : {}),
        ...(changes.allowedOrgIds !== undefined ? { allowed_org_ids: toJson(changes.allowedOrgIds) } : {}),
        ...(changes.eventTypes !== undefined ? { event_types: toJson(changes.eventTypes ? [...new Set(changes.eventTypes)] : null) } : {}),
        updated_at: nowIso(),
      };
      await tx.db.updateTable('webhook_subscriptions').set(set).where('id', '=', row.id).execute();
      const updated = { ...row, ...set };
      await auditWebhookEvent(tx, caller, updated, 'webhook.updated', {
        eventTypes: fromJson(updated.event_types),
        allowedOrgIds: fromJson(updated.allowed_org_ids),
      });
      return toSubscriptionRecord(updated);
    },
    caller.idempotency,
  );
}

/** Subscriptions whose subject lies within the caller's, oldest first (never their secrets). */
export async function listSubscriptions(ctx: AppContext, caller: Caller, params: { cursor?: string; limit: number }): Promise<Page<SubscriptionRecord>> {
  const query = ctx.db.db
    .selectFrom('webhook_subscriptions')
    .selectAll()
    .where(subjectWithin(ctx.db.db, adminSubjectOf(caller)));
  return keysetPage(query, BY_CREATION, params, toSubscriptionRecord);
}

export async function getSubscription(ctx: AppContext, caller: Caller, id: string): Promise<SubscriptionRecord> {
  return toSubscriptionRecord(await loadSubscription(ctx.db, caller, id));
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
  return inTransaction(ctx.db, async (tx) => disableOrEnable(tx, caller, await loadSubscription(tx, caller, id), status, reason), caller.idempotency);
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
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row = await loadSubscription(tx, caller, id);
      const secret = mintWebhookSecret();
      const expiresAt = new Date(Date.now() + graceMs).toISOString();
      await tx.db
        .updateTable('webhook_subscriptions')
        .set({ secret, previous_secret: row.secret, previous_secret_expires_at: expiresAt, updated_at: nowIso() })
        .where('id', '=', row.id)
        .execute();
      await auditWebhookEvent(tx, caller, row, 'webhook.secret_rotated', { previousSecretExpiresAt: expiresAt });
      return { id: row.id, secret, previousSecretExpiresAt: expiresAt };
    },
    caller.idempotency,
  );
}

/** Removes the subscription with its queue and delivery log. */
export async function deleteSubscription(ctx: AppContext, caller: Caller, id: string): Promise<{ id: string; deleted: true }> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row = await loadSubscription(tx, caller, id);
      await auditWebhookEvent(tx, caller, row, 'webhook.deleted');
      await tx.db.deleteFrom('webhook_attempts').where('subscription_id', '=', row.id).execute();
      await tx.db.deleteFrom('webhook_deliveries').where('subscription_id', '=', row.id).execute();
      await tx.db.deleteFrom('webhook_subscriptions').where('id', '=', row.id).execute();
      return { id: row.id, deleted: true as const };
    },
    caller.idempotency,
  );
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
  caller: Caller,
  id: string,
  limit = 50,
): Promise<{ subscriptionId: string; status: string; queue: Record<string, number>; items: AttemptView[] }> {
  return inTransaction(ctx.db, async (tx) => {
    const row = await loadSubscription(tx, caller, id);
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
  until?: string,
): Promise<{ id: string; requeued: number; truncated: boolean; nextSince: string | null }> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row = await loadSubscription(tx, caller, id);
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
          .$if(until !== undefined, (q) => q.where('created_at', '<', until!))
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
          details: { since, ...(until ? { until } : {}), requeued },
        });
      }
      return { id: row.id, requeued, truncated, nextSince: truncated ? nextSince : null };
    },
    caller.idempotency,
  );
}

export interface DeliveryView {
  deliveryId: string;
  eventId: string;
  eventType: string;
  orgId: string | null;
  status: string;
  attempts: { at: string; responseStatus: number | null; latencyMs: number; error: string | null }[];
}

/** The subscription's deliveries, newest first, each with its attempts (two statements per page). */
export async function listDeliveries(ctx: AppContext, caller: Caller, id: string, params: { cursor?: string; limit: number }): Promise<Page<DeliveryView>> {
  const sub = await loadSubscription(ctx.db, caller, id);
  let query = ctx.db.db
    .selectFrom('webhook_deliveries')
    .select(['id', 'event_id', 'event_type', 'org_id', 'status', 'created_at'])
    .where('subscription_id', '=', sub.id);
  if (params.cursor) {
    const [createdAt, deliveryId] = decodeCursor(params.cursor, ['string', 'string']) as string[];
    query = query.where((eb) => eb.or([eb('created_at', '<', createdAt!), eb.and([eb('created_at', '=', createdAt!), eb('id', '<', deliveryId!)])]));
  }
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(params.limit + 1)
    .execute();
  const ids = rows.slice(0, params.limit).map((r) => r.id);
  const attempts =
    ids.length === 0
      ? []
      : await ctx.db.db
          .selectFrom('webhook_attempts')
          .select(['delivery_id', 'started_at', 'response_code', 'duration_ms', 'error'])
          .where('delivery_id', 'in', ids)
          .orderBy('started_at')
          .execute();
  const byDelivery = new Map<string, DeliveryView['attempts']>();
  for (const a of attempts) {
    const list = byDelivery.get(a.delivery_id) ?? [];
    list.push({ at: a.started_at, responseStatus: a.response_code, latencyMs: a.duration_ms, error: a.error });
    byDelivery.set(a.delivery_id, list);
  }
  return paginate(
    rows,
    params.limit,
    (r) => ({ deliveryId: r.id, eventId: r.event_id, eventType: r.event_type, orgId: r.org_id, status: r.status, attempts: byDelivery.get(r.id) ?? [] }),
    (r) => [r.created_at, r.id],
  );
}
