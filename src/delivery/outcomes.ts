import type { AppContext } from '../context.js';
import { inTransaction, type Tx } from '../db/connect.js';
import type { WebhookAttemptTable } from '../db/types.js';
import { newId, nowIso } from '../domain/shared/ids.js';
import { findSubscription } from '../domain/webhooks/repo.js';
import { disableOrEnable, dispatcherCaller } from '../domain/webhooks/service.js';
import type { ClaimedDelivery } from './claims.js';
import type { SendResult } from './http-sender.js';
import { CONTINUOUS_FAILURE_LIMIT_MS, nextRetryDelayMs } from './retry-policy.js';

export interface AttemptOutcome {
  delivery: ClaimedDelivery;
  startedAt: string;
  result: SendResult;
  /** The worker stopped mid-request: recorded, but not counted against the retry schedule. */
  interrupted: boolean;
}

export interface RecordedEffects {
  /** Retries scheduled, by subscription, in milliseconds from now. */
  retries: { subscriptionId: string; delayMs: number }[];
  disabledSubscriptions: string[];
}

const INSERT_CHUNK = 200;

function attemptRow(o: AttemptOutcome, workerId: string): WebhookAttemptTable {
  return {
    id: newId(),
    delivery_id: o.delivery.id,
    subscription_id: o.delivery.subscription_id,
    org_id: o.delivery.org_id,
    event_id: o.delivery.event_id,
    event_type: o.delivery.event_type,
    attempt_number: o.delivery.attempt_count + 1,
    started_at: o.startedAt,
    duration_ms: o.result.durationMs,
    outcome: o.result.ok ? 'succeeded' : 'failed',
    response_code: o.result.statusCode,
    response_body: o.result.body,
    error: o.result.error,
    worker_id: workerId,
  };
}

async function disableSubscription(tx: Tx, subscriptionId: string, reason: string): Promise<boolean> {
  const row = await findSubscription(tx.db, subscriptionId);
  if (row?.status !== 'active') return false;
  await disableOrEnable(tx, dispatcherCaller(), row, 'disabled', reason);
  return true;
}

/**
 * Records a batch of finished attempts in one transaction: the attempt log, each delivery's next
 * state (delivered, retry at, or failed for good), and the subscription-level consequences (410 and
 * five days of continuous failure disable it; any success ends a failure run). Updates are guarded
 * by `claimed_by`, so a worker whose lease was taken over cannot overwrite the new owner's state.
 */
export async function recordOutcomes(ctx: AppContext, outcomes: AttemptOutcome[], workerId: string): Promise<RecordedEffects> {
  const schedule = ctx.config.WEBHOOK_RETRY_SCHEDULE;
  return inTransaction(ctx.db, async (tx) => {
    const effects: RecordedEffects = { retries: [], disabledSubscriptions: [] };
    const rows = outcomes.map((o) => attemptRow(o, workerId));
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      await tx.db
        .insertInto('webhook_attempts')
        .values(rows.slice(i, i + INSERT_CHUNK))
        .execute();
    }
    const now = nowIso();
    const nowMs = Date.parse(now);

    // Successes: one update per response code (nearly always a single 200 or 204 group).
    const delivered = new Map<number, string[]>();
    const succeededSubs = new Set<string>();
    const failedSubs = new Map<string, string>();
    const goneSubs = new Set<string>();
    for (const o of outcomes) {
      const { delivery, result } = o;
      if (result.ok) {
        const ids = delivered.get(result.statusCode!) ?? [];
        ids.push(delivery.id);
        delivered.set(result.statusCode!, ids);
        succeededSubs.add(delivery.subscription_id);
        continue;
      }
      const owned = tx.db.updateTable('webhook_deliveries').where('id', '=', delivery.id).where('claimed_by', '=', workerId);
      if (o.interrupted) {
        await owned.set({ claimed_until: null, claimed_by: null, next_attempt_at: now, updated_at: now }).execute();
        continue;
      }
      const attemptsMade = delivery.attempt_count + 1;
      const gone = result.statusCode === 410;
      const delay = gone || delivery.body === null ? null : nextRetryDelayMs(schedule, attemptsMade, result.retryAfterMs);
      const base = {
        attempt_count: attemptsMade,
        claimed_until: null,
        claimed_by: null,
        last_response_code: result.statusCode,
        last_error: result.error,
        updated_at: now,
      };
      if (delay === null) {
        await owned.set({ ...base, status: 'failed', completed_at: now }).execute();
      } else {
        await owned.set({ ...base, next_attempt_at: new Date(nowMs + delay).toISOString() }).execute();
        effects.retries.push({ subscriptionId: delivery.subscription_id, delayMs: delay });
      }
      if (gone) goneSubs.add(delivery.subscription_id);
      else if (!failedSubs.has(delivery.subscription_id)) failedSubs.set(delivery.subscription_id, o.startedAt);
    }
    for (const [code, ids] of delivered) {
      await tx.db
        .updateTable('webhook_deliveries')
        .set({
          status: 'delivered',
          attempt_count: (eb) => eb('attempt_count', '+', 1),
          claimed_until: null,
          claimed_by: null,
          last_response_code: code,
          last_error: null,
          updated_at: now,
          completed_at: now,
        })
        .where('id', 'in', ids)
        .where('claimed_by', '=', workerId)
        .execute();
    }

    for (const subscriptionId of goneSubs) {
      if (await disableSubscription(tx, subscriptionId, 'the endpoint answered 410 Gone')) effects.disabledSubscriptions.push(subscriptionId);
    }
    for (const [subscriptionId, startedAt] of failedSubs) {
      if (succeededSubs.has(subscriptionId) || goneSubs.has(subscriptionId)) continue;
      await tx.db
        .updateTable('webhook_subscriptions')
        .set({ failing_since: startedAt })
        .where('id', '=', subscriptionId)
        .where('failing_since', 'is', null)
        .execute();
      const sub = await tx.db.selectFrom('webhook_subscriptions').select(['failing_since', 'status']).where('id', '=', subscriptionId).executeTakeFirst();
      if (sub?.status === 'active' && sub.failing_since && nowMs - Date.parse(sub.failing_since) >= CONTINUOUS_FAILURE_LIMIT_MS) {
        if (await disableSubscription(tx, subscriptionId, 'every attempt failed for 5 days')) effects.disabledSubscriptions.push(subscriptionId);
      }
    }
    if (succeededSubs.size > 0) {
      await tx.db
        .updateTable('webhook_subscriptions')
        .set({ failing_since: null })
        .where('id', 'in', [...succeededSubs])
        .where('failing_since', 'is not', null)
        .execute();
    }
    return effects;
  });
}
