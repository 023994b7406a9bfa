import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { type PingResult, sendTestPing } from '../../../domain/webhooks/test-ping.js';
import { isoTimestampInput, pageOf, timestamp, uuid } from '../../../domain/shared/schema.js';
import { WEBHOOK_EVENT_TYPES, type SubscriptionRecord } from '../../../domain/webhooks/schema.js';
import {
  ATTEMPTS_PER_DELIVERY,
  createSubscription,
  deleteSubscription,
  getSubscription,
  listDeliveries,
  listSubscriptions,
  replayDeliveries,
  rotateSubscriptionSecret,
  setSubscriptionStatus,
  updateSubscription,
} from '../../../domain/webhooks/service.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { pageQuery } from '../params.js';
import { adminErrors, idParam } from './params.js';
import { presentWebhook, webhookRecord } from '../../../domain/presenters/admin-records.js';
import { storedAnswer } from './present.js';

const eventTypes = z.array(z.enum(WEBHOOK_EVENT_TYPES)).min(1).max(WEBHOOK_EVENT_TYPES.length);

const orgIds = z.array(z.uuid()).min(1).max(1000);

const createWebhookBody = z.strictObject({
  url: z.string().min(1).max(2048),
  subject: z.strictObject({ type: z.enum(['partner', 'enterprise', 'org']), id: z.uuid() }),
  allowedOrgIds: orgIds.nullable().optional(),
  eventTypes: eventTypes.nullable().optional().describe('Only these event types (default: every type).'),
});

const updateWebhookBody = z
  .strictObject({ url: z.string().min(1).max(2048), allowedOrgIds: orgIds.nullable(), eventTypes: eventTypes.nullable() })
  .partial()
  .refine((v) => Object.keys(v).length > 0, 'name at least one of url, allowedOrgIds, eventTypes');

const replayBody = z.strictObject({ since: isoTimestampInput, until: isoTimestampInput.optional() });

const deliveryItem = z.object({
  deliveryId: uuid,
  eventId: uuid,
  eventType: z.string(),
  orgId: uuid.nullable(),
  status: z.string().describe('pending, delivered or failed'),
  attempts: z
    .array(z.object({ at: timestamp, responseStatus: z.number().int().nullable(), latencyMs: z.number(), error: z.string().nullable() }))
    .describe(`Its latest ${ATTEMPTS_PER_DELIVERY} attempts (replays add more), oldest first.`),
});

const webhookPath = z.object({ id: idParam });

const withSecret = (v: { secret: string; record: SubscriptionRecord }) => ({ ...presentWebhook(v.record), secret: v.secret });

const rotatedSecret = (v: { id: string; secret: string; previousSecretExpiresAt: string }) => ({
  webhookId: v.id,
  secret: v.secret,
  previousSecretExpiresAt: v.previousSecretExpiresAt,
});

const pingAnswer = (v: PingResult) => ({ outcome: v.outcome, status: v.responseCode, latencyMs: v.latencyMs, error: v.error });

/** Webhook subscriptions: create, read, change, test, replay and their deliveries. */
export const webhookAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.post('/webhooks', {
      config: storedAnswer(201, withSecret),
      schema: {
        operationId: 'createWebhook',
        tags: ['webhooks'],
        summary: 'Subscribe a URL to the events of a subject beneath this admin key; `secret` is shown in this answer only.',
        headers: idempotencyHeaders,
        body: createWebhookBody,
        response: { 201: webhookRecord, ...adminErrors({ 404: 'not_found: no such subject.' }) },
      },
      handler: async (req, reply) => {
        const { url, subject, allowedOrgIds, eventTypes: types } = req.body;
        const created = await createSubscription(
          ctx,
          callerOf(req),
          {
            url,
            subjectType: subject.type,
            subjectId: subject.id,
            allowedOrgIds: allowedOrgIds ?? null,
            eventTypes: types ?? null,
          },
          writeOptionsOf(req),
        );
        return reply.code(201).send(withSecret(created));
      },
    });
    r.get('/webhooks', {
      schema: {
        operationId: 'listWebhooks',
        tags: ['webhooks'],
        summary: 'Subscriptions beneath this admin key, oldest first (never their secrets).',
        querystring: pageQuery,
        response: { 200: pageOf(webhookRecord), ...adminErrors() },
      },
      handler: async (req) => {
        const page = await listSubscriptions(ctx, callerOf(req), req.query);
        return { items: page.items.map(presentWebhook), nextCursor: page.nextCursor };
      },
    });
    r.get('/webhooks/:id', {
      schema: {
        operationId: 'getWebhook',
        tags: ['webhooks'],
        summary: 'One subscription.',
        params: webhookPath,
        response: { 200: webhookRecord, ...adminErrors({ 404: 'not_found' }) },
      },
      handler: async (req) => presentWebhook(await getSubscription(ctx, callerOf(req), req.params.id)),
    });
    r.patch('/webhooks/:id', {
      config: storedAnswer(200, presentWebhook),
      schema: {
        operationId: 'updateWebhook',
        tags: ['webhooks'],
        summary: "Change a subscription's URL, allowed orgs or event types (null: all).",
        headers: idempotencyHeaders,
        params: webhookPath,
        body: updateWebhookBody,
        response: { 200: webhookRecord, ...adminErrors({ 404: 'not_found' }) },
      },
      handler: async (req) => presentWebhook(await updateSubscription(ctx, callerOf(req), req.params.id, req.body, writeOptionsOf(req))),
    });
    r.delete('/webhooks/:id', {
      schema: {
        operationId: 'deleteWebhook',
        tags: ['webhooks'],
        summary: 'Delete a subscription with its queue and delivery log.',
        params: webhookPath,
        response: { 200: z.object({ webhookId: uuid, deleted: z.literal(true) }), ...adminErrors({ 404: 'not_found' }) },
      },
      handler: async (req) => ({ webhookId: (await deleteSubscription(ctx, callerOf(req), req.params.id, writeOptionsOf(req))).id, deleted: true as const }),
    });
    for (const [action, status, summary] of [
      ['enable', 'active', 'Resume deliveries (events of the disabled period can be replayed).'],
      ['disable', 'disabled', 'Stop queueing deliveries; queued ones wait.'],
    ] as const) {
      r.post(`/webhooks/:id/${action}`, {
        config: storedAnswer(200, presentWebhook),
        schema: {
          operationId: `${action}Webhook`,
          tags: ['webhooks'],
          summary,
          headers: idempotencyHeaders,
          params: webhookPath,
          response: { 200: webhookRecord, ...adminErrors({ 404: 'not_found' }) },
        },
        handler: async (req) =>
          presentWebhook(
            await setSubscriptionStatus(ctx, callerOf(req), req.params.id, status, status === 'disabled' ? 'disabled by an admin' : null, writeOptionsOf(req)),
          ),
      });
    }
    r.post('/webhooks/:id/rotate-secret', {
      config: storedAnswer(200, rotatedSecret),
      schema: {
        operationId: 'rotateWebhookSecret',
        tags: ['webhooks'],
        summary:
          'A new signing secret at once; the previous one also signs for 24 h. A replay (same Idempotency-Key) rotates nothing and answers without `secret`.',
        headers: idempotencyHeaders,
        params: webhookPath,
        response: {
          200: z.object({
            webhookId: uuid,
            secret: z.string().optional().describe('The new signing secret (whsec_...): in the rotating answer only, never in a replay.'),
            previousSecretExpiresAt: timestamp,
          }),
          ...adminErrors({ 404: 'not_found' }),
        },
      },
      handler: async (req) => rotatedSecret(await rotateSubscriptionSecret(ctx, callerOf(req), req.params.id, undefined, writeOptionsOf(req))),
    });
    r.post('/webhooks/:id/test', {
      config: storedAnswer(200, pingAnswer),
      schema: {
        operationId: 'testWebhook',
        tags: ['webhooks'],
        summary:
          'Send one signed webhook.ping now and report how it went (not retried). A replay (same Idempotency-Key) sends nothing and answers the first outcome.',
        headers: idempotencyHeaders,
        params: webhookPath,
        response: {
          200: z.object({
            outcome: z.enum(['succeeded', 'failed']),
            status: z.number().int().nullable().describe("The receiver's HTTP status, null when none came."),
            latencyMs: z.number(),
            error: z.string().nullable(),
          }),
          ...adminErrors({ 404: 'not_found' }),
        },
      },
      handler: async (req) => pingAnswer(await sendTestPing(ctx, callerOf(req), req.params.id, {}, writeOptionsOf(req))),
    });
    r.post('/webhooks/:id/replay', {
      config: storedAnswer(200, (v: { requeued: number }) => ({ replayed: v.requeued })),
      schema: {
        operationId: 'replayWebhook',
        tags: ['webhooks'],
        summary: 'Queue again every event of the subscription created in [since, until) (at most 10,000).',
        headers: idempotencyHeaders,
        params: webhookPath,
        body: replayBody,
        response: { 200: z.object({ replayed: z.number().int() }), ...adminErrors({ 404: 'not_found' }) },
      },
      handler: async (req) => ({
        replayed: (await replayDeliveries(ctx, callerOf(req), req.params.id, req.body.since, req.body.until, writeOptionsOf(req))).requeued,
      }),
    });
    r.get('/webhooks/:id/deliveries', {
      schema: {
        operationId: 'listWebhookDeliveries',
        tags: ['webhooks'],
        summary: "A subscription's deliveries, newest first, with their attempts.",
        params: webhookPath,
        querystring: pageQuery,
        response: { 200: pageOf(deliveryItem), ...adminErrors({ 404: 'not_found' }) },
      },
      handler: (req) => listDeliveries(ctx, callerOf(req), req.params.id, req.query),
    });
  };
