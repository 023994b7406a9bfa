import type { AppContext } from '../context.js';
import { inTransaction } from '../db/connect.js';
import type { Caller } from '../domain/access/principal.js';
import { recordAudit } from '../domain/audit/record.js';
import { API_VERSION } from '../domain/events/append.js';
import { newId, nowIso } from '../domain/shared/ids.js';
import { fromJson } from '../domain/shared/json.js';
import { coveredOrgIds } from '../domain/webhooks/repo.js';
import { loadSubscription } from '../domain/webhooks/service.js';
import { PING_EVENT_TYPE, signingSecrets } from '../domain/webhooks/schema.js';
import { signatureHeader } from '../domain/webhooks/signing.js';
import { WebhookSender } from './http-sender.js';

export interface PingResult {
  id: string;
  eventId: string;
  outcome: 'succeeded' | 'failed';
  responseCode: number | null;
  latencyMs: number;
  error: string | null;
  responseBody: string | null;
}

/**
 * Sends one signed `webhook.ping` to the subscription now (whatever its status) and records it in the
 * delivery log like any attempt. It is not retried: the operator sees the outcome at once.
 */
export async function sendTestPing(ctx: AppContext, caller: Caller, id: string, options: { timeoutMs?: number } = {}): Promise<PingResult> {
  const sub = await loadSubscription(ctx.db, caller, id);
  const eventId = newId();
  const createdAt = nowIso();
  const body = JSON.stringify({
    eventId,
    eventType: PING_EVENT_TYPE,
    apiVersion: API_VERSION,
    createdAt,
    data: { subscriptionId: sub.id },
  });
  const timestamp = new Date();
  const sender = new WebhookSender({ allowPrivateTargets: ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS, timeoutMs: options.timeoutMs });
  let result: Awaited<ReturnType<WebhookSender['send']>>;
  try {
    result = await sender.send(
      sub.url,
      {
        'content-type': 'application/json',
        'user-agent': 'emergency-api-webhooks/1.0',
        'webhook-id': eventId,
        'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
        'webhook-signature': signatureHeader(signingSecrets(sub), eventId, timestamp, body),
      },
      body,
    );
  } finally {
    await sender.close();
  }
  const outcome = result.ok ? 'succeeded' : 'failed';
  const deliveryId = newId();
  await inTransaction(ctx.db, async (tx) => {
    const now = nowIso();
    await tx.db
      .insertInto('webhook_deliveries')
      .values({
        id: deliveryId,
        subscription_id: sub.id,
        org_id: null,
        event_id: eventId,
        event_type: PING_EVENT_TYPE,
        payload: body,
        status: result.ok ? 'delivered' : 'failed',
        attempt_count: 1,
        next_attempt_at: createdAt,
        claimed_until: null,
        claimed_by: null,
        last_response_code: result.statusCode,
        last_error: result.error,
        created_at: createdAt,
        updated_at: now,
        completed_at: now,
      })
      .execute();
    await tx.db
      .insertInto('webhook_attempts')
      .values({
        id: newId(),
        delivery_id: deliveryId,
        subscription_id: sub.id,
        org_id: null,
        event_id: eventId,
        event_type: PING_EVENT_TYPE,
        attempt_number: 1,
        started_at: createdAt,
        duration_ms: result.durationMs,
        outcome,
        response_code: result.statusCode,
        response_body: result.body,
        error: result.error,
        worker_id: 'admin-cli',
      })
      .execute();
    for (const orgId of await coveredOrgIds(tx.db, sub.subject_type, sub.subject_id, fromJson<string[]>(sub.allowed_org_ids))) {
      recordAudit(tx, caller, {
        orgId,
        eventCategory: 'webhook',
        eventType: 'webhook.tested',
        resource: { type: 'webhook_subscription', id: sub.id },
        details: { eventId, outcome, responseCode: result.statusCode },
      });
    }
  });
  return {
    id: sub.id,
    eventId,
    outcome,
    responseCode: result.statusCode,
    latencyMs: result.durationMs,
    error: result.error,
    responseBody: result.body,
  };
}
