import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { createApiKey, getApiKey, type KeyRecord, listApiKeys, revokeApiKey, rotateApiKey } from '../../../domain/keys/service.js';
import { isoTimestampInput, pageOf } from '../../../domain/shared/schema.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { pageQuery } from '../params.js';
import { GRANTS, grantSchema } from '../../../domain/access/permissions.js';
import { adminErrors, idParam } from './params.js';
import { apiKeyRecord, presentApiKey } from '../../../domain/presenters/admin-records.js';
import { storedAnswer } from './present.js';

const createApiKeyBody = z.strictObject({
  name: z.string().trim().min(1).max(128),
  subject: z.strictObject({ type: z.enum(['partner', 'enterprise', 'org']), id: z.uuid() }),
  permissions: z.array(grantSchema).min(1).max(GRANTS.length),
  allowedOrgIds: z.array(z.uuid()).min(1).max(1000).nullable().optional(),
  activeUntilDate: isoTimestampInput.nullable().optional(),
});

const rotateBody = z.strictObject({
  graceHours: z
    .number()
    .min(0)
    .max(24 * 30)
    .optional()
    .describe('How long the previous key keeps working (default 24).'),
});

const keyPath = z.object({ id: idParam });

const created = (v: { key: string; record: KeyRecord }) => ({ ...presentApiKey(v.record), key: v.key });

const rotated = (v: { key: string; record: KeyRecord; previousKeyExpiresAt: string }) => ({
  ...presentApiKey(v.record),
  key: v.key,
  previousKeyExpiresAt: v.previousKeyExpiresAt,
});

const _same = <T>(v: T) => v;

/** API keys: mint, list, read, rotate and revoke. */
export const apiKeyAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.post('/api-keys', {
      config: storedAnswer(201, created),
      schema: {
        operationId: 'createApiKey',
        tags: ['api keys'],
        summary: 'Mint an API key for a subject beneath this admin key; `key` is shown in this answer only.',
        headers: idempotencyHeaders,
        body: createApiKeyBody,
        response: { 201: apiKeyRecord, ...adminErrors({ 404: 'not_found: no such subject.' }) },
      },
      handler: async (req, reply) => {
        const { name, subject, permissions, allowedOrgIds, activeUntilDate } = req.body;
        const minted = await createApiKey(
          ctx,
          callerOf(req),
          {
            name,
            subjectType: subject.type,
            subjectId: subject.id,
            permissions,
            allowedOrgIds: allowedOrgIds ?? null,
            activeUntil: activeUntilDate ?? null,
          },
          writeOptionsOf(req),
        );
        return reply.code(201).send(created(minted));
      },
    });
    r.get('/api-keys', {
      schema: {
        operationId: 'listApiKeys',
        tags: ['api keys'],
        summary: 'API keys beneath this admin key, oldest first (never the keys themselves).',
        querystring: pageQuery,
        response: { 200: pageOf(apiKeyRecord), ...adminErrors() },
      },
      handler: async (req) => {
        const page = await listApiKeys(ctx, callerOf(req), req.query);
        return { items: page.items.map(presentApiKey), nextCursor: page.nextCursor };
      },
    });
    r.get('/api-keys/:id', {
      schema: {
        operationId: 'getApiKey',
        tags: ['api keys'],
        summary: 'One API key (never the key itself).',
        params: keyPath,
        response: { 200: apiKeyRecord, ...adminErrors({ 404: 'not_found' }) },
      },
      handler: async (req) => presentApiKey(await getApiKey(ctx, callerOf(req), req.params.id)),
    });
    r.post('/api-keys/:id/rotate', {
      config: storedAnswer(201, rotated),
      schema: {
        operationId: 'rotateApiKey',
        tags: ['api keys'],
        summary: "Mint the key's successor with the same grants; the previous key works until previousKeyExpiresAt.",
        headers: idempotencyHeaders,
        params: keyPath,
        body: rotateBody.optional(),
        response: { 201: apiKeyRecord, ...adminErrors({ 404: 'not_found', 409: 'conflict: the key is revoked.' }) },
      },
      handler: async (req, reply) => {
        const graceMs = (req.body?.graceHours ?? 24) * 3600 * 1000;
        return reply.code(201).send(rotated(await rotateApiKey(ctx, callerOf(req), req.params.id, graceMs, writeOptionsOf(req))));
      },
    });
    r.post('/api-keys/:id/revoke', {
      config: storedAnswer(200, presentApiKey),
      schema: {
        operationId: 'revokeApiKey',
        tags: ['api keys'],
        summary: 'Revoke an API key: refused by the public API within seconds (status inactive).',
        headers: idempotencyHeaders,
        params: keyPath,
        response: { 200: apiKeyRecord, ...adminErrors({ 404: 'not_found' }) },
      },
      handler: async (req) => presentApiKey(await revokeApiKey(ctx, callerOf(req), req.params.id, writeOptionsOf(req))),
    });
  };
