import { setMaxListeners } from 'node:events';
import type { AppContext } from '../context.js';
import type { WebhookSubscriptionTable } from '../db/types.js';
import { nowIso } from '../domain/shared/ids.js';
import { signingSecrets } from '../domain/webhooks/schema.js';
import { signatureHeader } from '../domain/webhooks/signing.js';
import { type SendResult, WebhookSender } from './http-sender.js';
import { describeError } from '../observability/describe-error.js';
import type { DeliveryLogger } from './log.js';
import type { AttemptOutcome } from './outcomes.js';
import type { ClaimedDelivery } from '../domain/webhooks/queue.js';
import { webhookTargetResolver } from './target-resolver.js';

/** Signs and sends one claimed delivery, logs and counts the attempt, and returns its outcome for the recorder. */
export class DeliveryAttempts {
  private readonly sender: WebhookSender;
  /** Aborted when a stopping worker's grace period ends: the requests still running are cut short. */
  private readonly interruption = new AbortController();

  constructor(
    private readonly ctx: AppContext,
    options: { timeoutMs: number; perSubscription: number },
    private readonly log: DeliveryLogger,
  ) {
    // Every request in flight listens for the stop signal.
    setMaxListeners(0, this.interruption.signal);
    // One keep-alive connection per request a subscription may have in flight. Its requests in flight
    // bound its DNS lookups too: they share one lookup of its host name.
    this.sender = new WebhookSender({
      allowPrivateTargets: ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      timeoutMs: options.timeoutMs,
      connectionsPerOrigin: options.perSubscription,
      resolver: webhookTargetResolver(ctx),
    });
  }

  async send(sub: WebhookSubscriptionTable, delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    const startedAt = nowIso();
    let result: SendResult;
    try {
      if (delivery.body === null) {
        result = { ok: false, statusCode: null, body: null, error: 'event no longer available', durationMs: 0, retryAfterMs: null };
      } else {
        const timestamp = new Date();
        const headers = {
          'content-type': 'application/json',
          'user-agent': 'emergency-api-webhooks/1.0',
          // The event id, identical on every retry and replay: what receivers deduplicate on.
          'webhook-id': delivery.event_id,
          'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
          'webhook-signature': signatureHeader(signingSecrets(sub), delivery.event_id, timestamp, delivery.body),
        };
        result = await this.sender.send(sub.url, headers, delivery.body, this.interruption.signal, `${sub.subject_type}:${sub.subject_id}`);
      }
    } catch (err) {
      result = { ok: false, statusCode: null, body: null, error: 'request failed', durationMs: 0, retryAfterMs: null };
      this.log.error({ deliveryId: delivery.id, ...describeError(err) }, 'webhook send failed unexpectedly');
    }
    if (!result.ok && result.error) {
      this.log.warn(
        { deliveryId: delivery.id, subscriptionId: sub.id, origin: new URL(sub.url).origin, statusCode: result.statusCode, error: result.error },
        'webhook attempt failed',
      );
    } else if (!result.ok) {
      this.log.info({ deliveryId: delivery.id, subscriptionId: sub.id, statusCode: result.statusCode }, 'webhook attempt rejected');
    }
    this.recordMetrics(delivery, startedAt, result);
    return { delivery, startedAt, result, interrupted: this.interruption.signal.aborted && result.error === 'interrupted: worker stopping' };
  }

  /** Cuts the requests still running short; their deliveries go back to the queue as due. */
  interrupt(): void {
    this.interruption.abort();
  }

  async close(): Promise<void> {
    await this.sender.close();
  }

  /** Attempts by result, and the commit-to-first-attempt lag, for /metrics. */
  private recordMetrics(delivery: ClaimedDelivery, startedAt: string, result: SendResult): void {
    const metrics = this.ctx.metrics;
    metrics.webhookAttempts.inc({ result: result.ok ? 'success' : result.statusCode === null ? 'error' : result.statusCode >= 500 ? 'http_5xx' : 'http_4xx' });
    if (delivery.attempt_count === 0 && delivery.body) {
      try {
        const createdAt = Date.parse((JSON.parse(delivery.body) as { createdAt?: string }).createdAt ?? '');
        if (Number.isFinite(createdAt)) metrics.webhookLag.observe(Math.max(0, Date.parse(startedAt) - createdAt) / 1000);
      } catch {
        /* a ping or a body that is not an envelope has no commit time */
      }
    }
  }
}
