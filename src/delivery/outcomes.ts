import type { AppContext } from '../context.js';
import { inTransaction, type Tx } from '../db/connect.js';
import type { WebhookAttemptTable } from '../db/types.js';
import { newId, nowIso } from '../domain/shared/ids.js';
import { findSubscription } from '../domain/webhooks/repo.js';
import { disableOrEnable, dispatcherCaller } from '../domain/webhooks/service.js';
import type { SendResult } from './http-sender.js';
import { describeError } from '../observability/describe-error.js';
import type { DeliveryLogger } from './log.js';
import { type ClaimedDelivery, clearFailing, insertAttempts, markDelivered, markFailing, recordFailure, returnInterrupted } from '../domain/webhooks/queue.js';
import { CONTINUOUS_FAILURE_LIMIT_MS, nextRetryDelayMs } from './retry-policy.js';

export interface AttemptOutcome {
  delivery: ClaimedDelivery;
  startedAt: string;
  result: SendResult;
  /** The worker stopped mid-request: recorded, but not counted against the retry schedule. */
  interrupted: boolean;
}

interface RecordedEffects {
  /** Retries scheduled, by subscription, in milliseconds from now. */
  retries: { subscriptionId: string; delayMs: number }[];
  disabledSubscriptions: string[];
}

/** Most attempts written in one transaction. */
const OUTCOME_BATCH = 500;
/** How long a batch that could not be written waits before it is tried again. */
const FLUSH_RETRY_MS = 1000;
/**
 * Responses finishing within this window share one transaction (one commit per batch rather than per
 * attempt). It delays only the bookkeeping, never a send.
 */
const FLUSH_GATHER_MS = 5;

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
 * five days of continuous failure disable it; any success ends a failure run).
 */
async function recordOutcomes(ctx: AppContext, outcomes: AttemptOutcome[], workerId: string): Promise<RecordedEffects> {
  const schedule = ctx.config.WEBHOOK_RETRY_SCHEDULE;
  return inTransaction(ctx.db, async (tx) => {
    const effects: RecordedEffects = { retries: [], disabledSubscriptions: [] };
    await insertAttempts(
      tx,
      outcomes.map((o) => attemptRow(o, workerId)),
    );
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
      if (o.interrupted) {
        await returnInterrupted(tx, delivery.id, workerId, now);
        continue;
      }
      const attemptsMade = delivery.attempt_count + 1;
      const gone = result.statusCode === 410;
      const delay = gone || delivery.body === null ? null : nextRetryDelayMs(schedule, attemptsMade, result.retryAfterMs);
      await recordFailure(tx, delivery.id, workerId, {
        attemptCount: attemptsMade,
        responseCode: result.statusCode,
        error: result.error,
        now,
        retryAt: delay === null ? null : new Date(nowMs + delay).toISOString(),
      });
      if (delay !== null) effects.retries.push({ subscriptionId: delivery.subscription_id, delayMs: delay });
      if (gone) goneSubs.add(delivery.subscription_id);
      else if (!failedSubs.has(delivery.subscription_id)) failedSubs.set(delivery.subscription_id, o.startedAt);
    }
    for (const [code, ids] of delivered) await markDelivered(tx, ids, code, workerId, now);

    for (const subscriptionId of goneSubs) {
      if (await disableSubscription(tx, subscriptionId, 'the endpoint answered 410 Gone')) effects.disabledSubscriptions.push(subscriptionId);
    }
    for (const [subscriptionId, startedAt] of failedSubs) {
      if (succeededSubs.has(subscriptionId) || goneSubs.has(subscriptionId)) continue;
      const sub = await markFailing(tx, subscriptionId, startedAt);
      if (sub?.status === 'active' && sub.failing_since && nowMs - Date.parse(sub.failing_since) >= CONTINUOUS_FAILURE_LIMIT_MS) {
        if (await disableSubscription(tx, subscriptionId, 'every attempt failed for 5 days')) effects.disabledSubscriptions.push(subscriptionId);
      }
    }
    if (succeededSubs.size > 0) await clearFailing(tx, [...succeededSubs]);
    return effects;
  });
}

/**
 * Writes finished attempts in batches, off the send path: one transaction for everything that finished
 * meanwhile. A batch that cannot be written is kept and tried again (the leases keep the deliveries
 * from being sent twice meanwhile).
 */
export class OutcomeRecorder {
  private readonly outcomes: AttemptOutcome[] = [];
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly ctx: AppContext,
    private readonly workerId: string,
    private readonly stopping: AbortSignal,
    private readonly log: DeliveryLogger,
    private readonly effects: { retryDue(subscriptionId: string, delayMs: number): void; disabled(subscriptionId: string): void },
  ) {}

  add(outcome: AttemptOutcome): void {
    this.outcomes.push(outcome);
    this.flush();
  }

  /** On stop, once no request is in flight: writes what is left, unless the database is unreachable (the leases then expire). */
  async drain(): Promise<void> {
    while (this.flushing || this.outcomes.length > 0) {
      if (!this.flushing) this.flush();
      await this.flushing;
      if (this.outcomes.length > 0 && !this.flushing) break;
    }
  }

  private flush(): void {
    if (this.flushing) return;
    this.flushing = (async () => {
      await new Promise((r) => setTimeout(r, FLUSH_GATHER_MS));
      while (this.outcomes.length > 0) {
        const batch = this.outcomes.splice(0, OUTCOME_BATCH);
        try {
          const effects = await recordOutcomes(this.ctx, batch, this.workerId);
          for (const { subscriptionId, delayMs } of effects.retries) this.effects.retryDue(subscriptionId, delayMs);
          for (const id of effects.disabledSubscriptions) {
            this.effects.disabled(id);
            this.log.warn({ subscriptionId: id }, 'webhook subscription disabled');
          }
        } catch (err) {
          this.log.error(describeError(err), 'recording webhook attempts failed; will retry');
          this.outcomes.unshift(...batch);
          await new Promise((r) => setTimeout(r, FLUSH_RETRY_MS));
          if (this.stopping.aborted) return;
        }
      }
    })().finally(() => {
      this.flushing = null;
      if (this.outcomes.length > 0 && !this.stopping.aborted) this.flush();
    });
  }
}
