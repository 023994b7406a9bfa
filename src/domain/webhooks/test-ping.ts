import type { AppContext } from '../../context.js';
import { inTransaction, type Tx } from '../../db/connect.js';
import type { WriteOptions } from '../../db/unit-of-work.js';
import { insertSettledDelivery } from './queue.js';
import type { Caller } from '../access/principal.js';
import { recordAudit } from '../audit/record.js';
import { API_VERSION } from '../../log/append.js';
import { newId, nowIso } from '../shared/ids.js';
import { fromJson } from '../shared/json.js';
import { coveredOrgIds } from './repo.js';
import { PING_EVENT_TYPE, signingSecrets } from './schema.js';
import { loadSubscription } from './service.js';
import { signatureHeader } from './signing.js';

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
export async function sendTestPing(
  ctx: AppContext,
  caller: Caller,
  id: string,
  options: { timeoutMs?: number } = {},
  write: WriteOptions = {},
): Promise<PingResult> {
  const sub = await loadSubscription(ctx.db, caller, id);
  const eventId = newId();
  const createdAt = nowIso();
  const body = JSON.stringify({
    eventId,
    eventType: PING_EVENT_TYPE,
    apiVersion: API_VERSION,
    createdAt,
    // As every event of a sandbox instance says so (extensions §11).
    ...(ctx.config.SANDBOX ? { sandbox: true } : {}),
    data: { subscriptionId: sub.id },
  });
  const timestamp = new Date();
  const result = await ctx.webhookTransport.sendNow(
    sub.url,
    {
      'content-type': 'application/json',
      'user-agent': 'emergency-api-webhooks/1.0',
      'webhook-id': eventId,
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': signatureHeader(signingSecrets(sub), eventId, timestamp, body),
    },
    body,
    options,
  );
  const outcome = result.ok ? 'succeeded' : 'failed';
  const deliveryId = newId();
  const ping: PingResult = {
    id: sub.id,
    eventId,
    outcome,
    responseCode: result.statusCode,
    latencyMs: result.durationMs,
    error: result.error,
    responseBody: result.body,
  };
  const record = async (tx: Tx): Promise<PingResult> => {
    const now = nowIso();
    await insertSettledDelivery(
      tx,
      {
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
      },
      {
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
      },
    );
    for (const orgId of await coveredOrgIds(tx.db, sub.subject_type, sub.subject_id, fromJson<string[]>(sub.allowed_org_ids))) {
      recordAudit(tx, caller, {
        orgId,
        eventCategory: 'webhook',
        eventType: 'webhook.tested',
        resource: { type: 'webhook_subscription', id: sub.id },
        details: { eventId, outcome, responseCode: result.statusCode },
      });
    }
    return ping;
  };
  // The request's Idempotency-Key answer is stored with the log entry: a retry replays it and sends nothing.
  return inTransaction(ctx.db, record, write.idempotency);
}
