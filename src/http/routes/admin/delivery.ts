import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { sendTestPing } from '../../../delivery/ping.js';
import { listOrgDevices } from '../../../domain/devices/receipts.js';
import { devicePage } from '../../../domain/devices/receipt-schema.js';
import { createDevices, MAX_DEVICES_PER_REQUEST, revokeDevice, rotateDeviceToken } from '../../../domain/devices/service.js';
import type { DeviceRecord } from '../../../domain/devices/schema.js';
import { isoTimestampInput, pageOf, timestamp, uuid } from '../../../domain/shared/schema.js';
import { WEBHOOK_EVENT_TYPES, type SubscriptionRecord } from '../../../domain/webhooks/schema.js';
import {
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
import { idempotencyHeaders } from '../../../edge/idempotency.js';
import { pageQuery } from '../params.js';
import { adminErrors, idParam } from './params.js';
import { deviceRecord, presentDevice, presentWebhook, storedAnswer, webhookRecord } from './present.js';

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
  attempts: z.array(z.object({ at: timestamp, responseStatus: z.number().int().nullable(), latencyMs: z.number(), error: z.string().nullable() })),
});

const devicesBody = z.union([
  z.strictObject({ name: z.string().min(1).max(128) }),
  z.strictObject({
    devices: z
      .array(z.strictObject({ name: z.string().min(1).max(128) }))
      .min(1)
      .max(MAX_DEVICES_PER_REQUEST),
  }),
]);

const webhookPath = z.object({ id: idParam });
const devicePath = z.object({ device_id: idParam });
const withSecret = (v: { secret: string; record: SubscriptionRecord }) => ({ ...presentWebhook(v.record), secret: v.secret });
const withToken = (v: { token: string; record: DeviceRecord }) => ({ ...presentDevice(v.record), token: v.token });
const deviceItems = (v: { token: string; record: DeviceRecord }[]) => ({ items: v.map(withToken) });

/** Webhook subscriptions and base-station devices. */
export const deliveryAdminRoutes =
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
        const created = await createSubscription(ctx, callerOf(req), {
          url,
          subjectType: subject.type,
          subjectId: subject.id,
          allowedOrgIds: allowedOrgIds?.map((id) => id.toLowerCase()) ?? null,
          eventTypes: types ?? null,
        });
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
      handler: async (req) => {
        const { allowedOrgIds, ...rest } = req.body;
        const changes = { ...rest, ...(allowedOrgIds !== undefined ? { allowedOrgIds: allowedOrgIds?.map((id) => id.toLowerCase()) ?? null } : {}) };
        return presentWebhook(await updateSubscription(ctx, callerOf(req), req.params.id, changes));
      },
    });
    r.delete('/webhooks/:id', {
      schema: {
        operationId: 'deleteWebhook',
        tags: ['webhooks'],
        summary: 'Delete a subscription with its queue and delivery log.',
        params: webhookPath,
        response: { 200: z.object({ webhookId: uuid, deleted: z.literal(true) }), ...adminErrors({ 404: 'not_found' }) },
      },
      handler: async (req) => ({ webhookId: (await deleteSubscription(ctx, callerOf(req), req.params.id)).id, deleted: true as const }),
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
          presentWebhook(await setSubscriptionStatus(ctx, callerOf(req), req.params.id, status, status === 'disabled' ? 'disabled by an admin' : null)),
      });
    }
    r.post('/webhooks/:id/rotate-secret', {
      schema: {
        operationId: 'rotateWebhookSecret',
        tags: ['webhooks'],
        summary: 'A new signing secret at once; the previous one also signs for 24 h.',
        params: webhookPath,
        response: {
          200: z.object({ webhookId: uuid, secret: z.string(), previousSecretExpiresAt: timestamp }),
          ...adminErrors({ 404: 'not_found' }),
        },
      },
      handler: async (req) => {
        const { id, secret, previousSecretExpiresAt } = await rotateSubscriptionSecret(ctx, callerOf(req), req.params.id);
        return { webhookId: id, secret, previousSecretExpiresAt };
      },
    });
    r.post('/webhooks/:id/test', {
      schema: {
        operationId: 'testWebhook',
        tags: ['webhooks'],
        summary: 'Send one signed webhook.ping now and report how it went (not retried).',
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
      handler: async (req) => {
        const ping = await sendTestPing(ctx, callerOf(req), req.params.id);
        return { outcome: ping.outcome, status: ping.responseCode, latencyMs: ping.latencyMs, error: ping.error };
      },
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
      handler: async (req) => ({ replayed: (await replayDeliveries(ctx, callerOf(req), req.params.id, req.body.since, req.body.until)).requeued }),
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

    r.post('/orgs/:org_id/devices', {
      config: storedAnswer(201, (v: { token: string; record: DeviceRecord }[], body) =>
        body && typeof body === 'object' && 'devices' in body ? deviceItems(v) : withToken(v[0]!),
      ),
      schema: {
        operationId: 'createDevices',
        tags: ['devices'],
        summary: `Register one base station ({name}: answers the device) or a fleet ({devices:[{name},...]}, at most ${MAX_DEVICES_PER_REQUEST}, one transaction: answers {items}); tokens are shown in this answer only.`,
        headers: idempotencyHeaders,
        params: z.object({ org_id: idParam }),
        body: devicesBody,
        response: { 201: z.union([deviceRecord, z.object({ items: z.array(deviceRecord) })]), ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: async (req, reply) => {
        const names = 'devices' in req.body ? req.body.devices.map((d) => d.name) : [req.body.name];
        const created = await createDevices(ctx, callerOf(req), req.params.org_id, names);
        return reply.code(201).send('devices' in req.body ? deviceItems(created) : withToken(created[0]!));
      },
    });
    r.get('/orgs/:org_id/devices', {
      schema: {
        operationId: 'listDevices',
        tags: ['devices'],
        summary: "An organization's base stations by name, with presence and acknowledged offset.",
        params: z.object({ org_id: idParam }),
        querystring: pageQuery,
        response: { 200: devicePage, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: (req) => listOrgDevices(ctx, callerOf(req), req.params.org_id, req.query),
    });
    r.post('/devices/:device_id/revoke', {
      config: storedAnswer(200, presentDevice),
      schema: {
        operationId: 'revokeDevice',
        tags: ['devices'],
        summary: 'Revoke a device: its token stops working at once and its open socket is closed within seconds.',
        headers: idempotencyHeaders,
        params: devicePath,
        response: { 200: deviceRecord, ...adminErrors({ 404: 'not_found' }) },
      },
      handler: async (req) => presentDevice(await revokeDevice(ctx, callerOf(req), req.params.device_id)),
    });
    r.post('/devices/:device_id/rotate-token', {
      config: storedAnswer(200, withToken),
      schema: {
        operationId: 'rotateDeviceToken',
        tags: ['devices'],
        summary: 'A new device token; the old one stops authenticating at once. `token` is shown in this answer only.',
        headers: idempotencyHeaders,
        params: devicePath,
        response: { 200: deviceRecord, ...adminErrors({ 404: 'not_found', 409: 'conflict: the device is revoked.' }) },
      },
      handler: async (req) => withToken(await rotateDeviceToken(ctx, callerOf(req), req.params.device_id)),
    });
  };
