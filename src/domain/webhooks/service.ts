import type { WriteOptions } from '../../db/unit-of-work.js';
import type { AppContext } from '../../context.js';
import { inTransaction, type Tx } from '../../db/connect.js';
import type { WebhookSubscriptionTable } from '../../db/types.js';
import type { Caller } from '../access/principal.js';
import { recordAudit } from '../audit/record.js';
import { AppError } from '../../errors.js';
import { eventsCreatedBetween } from '../../log/reads.js';
import { adminSubjectOf, requireReach } from '../access/admin-scope.js';
import { BY_CREATION, CURSOR_SHAPES, decodeCursor, keysetPage, paginate } from '../shared/cursor.js';
import { isUuid, newId, normalizeId, nowIso } from '../shared/ids.js';
import type { Page } from '../shared/schema.js';
import { placeOfSubject, requireOrgsWithinSubject, subjectWithin } from '../tenancy/places.js';
import { fromJson, toJson } from '../shared/json.js';
import { deleteQueueOf, deliveriesPage, deliveryCounts, latestAttempts, pendingDelivery, recentAttempts, requeueDelivery } from './queue.js';
import { coveredOrgIds, findSubscription } from './repo.js';
import { type SubscriptionRecord, type SubscriptionSpec, toSubscriptionRecord, WEBHOOK_EVENT_TYPES } from './schema.js';
import { mintWebhookSecret } from './signing.js';
import { checkWebhookUrl } from '../outbound/webhook-url.js';

export const SECRET_ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;
/** Upper bound of one replay command; the operator continues with the returned `nextSince`. */
export const REPLAY_MAX_EVENTS = 10_000;

/** The caller recorded in the audit log when the delivery worker itself disables a subscription. */
export const dispatcherCaller = (): Caller => ({ principal: { kind: 'operator', name: 'webhook dispatcher' }, requestId: null });

/**
 * Writes one `webhook.*` audit entry in every organization the subscription covers (and in `alsoOrgIds`).
 * Details given per org let an entry say how the subscription concerns that org alone.
 */
async function auditWebhookEvent(
  tx: Tx,
  caller: Caller,
  row: WebhookSubscriptionTable,
  eventType: string,
  details: Record<string, unknown> | ((orgId: string) => Record<string, unknown>) = {},
  alsoOrgIds: string[] = [],
) {
  const covered = await coveredOrgIds(tx.db, row.subject_type, row.subject_id, fromJson<string[]>(row.allowed_org_ids));
  for (const orgId of new Set([...covered, ...alsoOrgIds])) {
    recordAudit(tx, caller, {
      orgId,
      eventCategory: 'webhook',
      eventType,
      resource: { type: 'webhook_subscription', id: row.id },
      // The URL's origin only: subscribers sometimes put tokens in the path or query.
      details: { origin: new URL(row.url).origin, ...(typeof details === 'function' ? details(orgId) : details) },
    });
  }
}

/**
 * allowedOrgIds as one org's audit log shows them: null (every org of the subject), or the list narrowed
 * to that org ([] once it is left out), so no org's log names another org.
 */
function allowedOrgIdsSeenBy(orgId: string, allowed: string[] | null): string[] | null {
  return allowed === null ? null : allowed.filter((id) => id === orgId);
}

/** The subscription, when it exists and its subject lies within the caller's (else 404 / 403). */
export async function loadSubscription(tx: Pick<Tx, 'db'>, caller: Caller, id: string): Promise<WebhookSubscriptionTable> {
  const row = isUuid(id) ? await findSubscription(tx.db, id) : undefined;
  if (!row) throw new AppError('not_found', `No webhook subscription ${id}.`);
  requireReach(caller, await placeOfSubject(tx.db, row.subject_type as SubscriptionSpec['subjectType'], row.subject_id), `No webhook subscription ${id}.`);
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
  write: WriteOptions = {},
): Promise<{ id: string; secret: string; record: SubscriptionRecord }> {
  const url = validateSpec(ctx, spec);
  return inTransaction(
    ctx.db,
    async (tx) => {
      requireReach(caller, await placeOfSubject(tx.db, spec.subjectType, spec.subjectId));
      await requireOrgsWithinSubject(tx.db, { type: spec.subjectType, id: spec.subjectId }, spec.allowedOrgIds, ['body', 'allowedOrgIds']);
      const now = nowIso();
      const row: WebhookSubscriptionTable = {
        id: newId(),
        subject_type: spec.subjectType,
        subject_id: normalizeId(spec.subjectId),
        allowed_org_ids: toJson(spec.allowedOrgIds?.map(normalizeId) ?? null),
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
    write.idempotency,
  );
}

/** Changes a subscription's URL, allowed orgs or event-type filter (null: every type / every org). */
export async function updateSubscription(
  ctx: AppContext,
  caller: Caller,
  id: string,
  changes: { url?: string; allowedOrgIds?: string[] | null; eventTypes?: SubscriptionSpec['eventTypes'] },
  write: WriteOptions = {},
): Promise<SubscriptionRecord> {
  const url = changes.url === undefined ? undefined : checkedUrl(ctx, changes.url);
  checkEventTypes(changes.eventTypes);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row = await loadSubscription(tx, caller, id);
      const subject = { type: row.subject_type as SubscriptionSpec['subjectType'], id: row.subject_id };
      await requireOrgsWithinSubject(tx.db, subject, changes.allowedOrgIds, ['body', 'allowedOrgIds']);
      const set = {
        ...(url !== undefined ? { url } : {}),
        ...(changes.allowedOrgIds !== undefined ? { allowed_org_ids: toJson(changes.allowedOrgIds?.map(normalizeId) ?? null) } : {}),
        ...(changes.eventTypes !== undefined ? { event_types: toJson(changes.eventTypes ? [...new Set(changes.eventTypes)] : null) } : {}),
        updated_at: nowIso(),
      };
      await tx.db.updateTable('webhook_subscriptions').set(set).where('id', '=', row.id).execute();
      const updated = { ...row, ...set };
      // The orgs it covered before hear of the change too, an org left out included.
      const coveredBefore = await coveredOrgIds(tx.db, row.subject_type, row.subject_id, fromJson<string[]>(row.allowed_org_ids));
      const allowed = fromJson<string[]>(updated.allowed_org_ids);
      await auditWebhookEvent(
        tx,
        caller,
        updated,
        'webhook.updated',
        (orgId) => ({ eventTypes: fromJson(updated.event_types), allowedOrgIds: allowedOrgIdsSeenBy(orgId, allowed) }),
        coveredBefore,
      );
      return toSubscriptionRecord(updated);
    },
    write.idempotency,
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
  write: WriteOptions = {},
): Promise<SubscriptionRecord> {
  return inTransaction(ctx.db, async (tx) => disableOrEnable(tx, caller, await loadSubscription(tx, caller, id), status, reason), write.idempotency);
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
  write: WriteOptions = {},
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
    write.idempotency,
  );
}

/** Removes the subscription with its queue and delivery log. */
export async function deleteSubscription(ctx: AppContext, caller: Caller, id: string, write: WriteOptions = {}): Promise<{ id: string; deleted: true }> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row = await loadSubscription(tx, caller, id);
      await auditWebhookEvent(tx, caller, row, 'webhook.deleted');
      await deleteQueueOf(tx, row.id);
      await tx.db.deleteFrom('webhook_subscriptions').where('id', '=', row.id).execute();
      return { id: row.id, deleted: true as const };
    },
    write.idempotency,
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
    const counts = await deliveryCounts(tx.db, row.id);
    const attempts = await recentAttempts(tx.db, row.id, limit);
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
  write: WriteOptions = {},
): Promise<{ id: string; requeued: number; truncated: boolean; nextSince: string | null }> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row = await loadSubscription(tx, caller, id);
      const orgIds = await coveredOrgIds(tx.db, row.subject_type, row.subject_id, fromJson<string[]>(row.allowed_org_ids));
      const types = fromJson<string[]>(row.event_types);
      const now = nowIso();
      let requeued = 0;
      // Each org's audit entry counts that org's events only: the total would tell of the others' activity.
      const requeuedIn = new Map<string, number>();
      let truncated = false;
      let nextSince: string | null = null;
      for (const orgId of orgIds) {
        const events = await eventsCreatedBetween(tx.db, orgId, { since, until }, types, REPLAY_MAX_EVENTS - requeued + 1);
        if (requeued + events.length > REPLAY_MAX_EVENTS) {
          truncated = true;
          events.length = REPLAY_MAX_EVENTS - requeued;
        }
        for (const event of events) {
          // Same (subscription, event) pair as the original delivery: its eventId, hence its webhook-id, is unchanged.
          await requeueDelivery(tx, pendingDelivery(newId(), row.id, orgId, event, now), now);
          requeued++;
          requeuedIn.set(orgId, (requeuedIn.get(orgId) ?? 0) + 1);
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
          details: { since, ...(until ? { until } : {}), requeued: requeuedIn.get(orgId) ?? 0 },
        });
      }
      return { id: row.id, requeued, truncated, nextSince: truncated ? nextSince : null };
    },
    write.idempotency,
  );
}

/** The latest attempts each delivery of a list shows. */
export const ATTEMPTS_PER_DELIVERY = 50;

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
  const [createdAt, deliveryId] = params.cursor ? decodeCursor(params.cursor, CURSOR_SHAPES.byCreation) : [];
  const rows = await deliveriesPage(ctx.db.db, sub.id, params.cursor ? [createdAt!, deliveryId!] : null, params.limit);
  const ids = rows.slice(0, params.limit).map((r) => r.id);
  // Replays add attempts to a delivery without end: each lists its latest ones only, so one delivery
  // cannot make an answer (or this read) unbounded (extensions.md §9).
  const attempts = await latestAttempts(ctx.db.db, ids, ATTEMPTS_PER_DELIVERY);
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
