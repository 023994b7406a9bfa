import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { type AdminKeyRecord, adminSubjectSchema, createAdminKey, listAdminKeys, revokeAdminKey } from '../../../domain/admin-keys/service.js';
import { pageOf, timestamp, uuid } from '../../../domain/shared/schema.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { pageQuery } from '../params.js';
import { adminErrors, idParam } from './params.js';
import { storedAnswer } from './present.js';

const adminKeyRecord = z
  .object({
    adminKeyId: uuid,
    name: z.string(),
    subject: adminSubjectSchema,
    status: z.enum(['active', 'inactive']),
    createdAt: timestamp,
    lastUsedAt: timestamp.nullable(),
    key: z.string().optional().describe('The admin key itself: in the creating answer only.'),
  })
  .meta({ id: 'AdminKey' });

const keyPath = z.object({ id: idParam });

const same = <T>(v: T) => v;

/** Admin keys: mint, list and revoke. */
export const adminKeyAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.post('/admin-keys', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createAdminKey',
        tags: ['admin keys'],
        summary: 'Mint an admin key for a subject within this one; `key` is shown in this answer only.',
        headers: idempotencyHeaders,
        body: z.strictObject({ name: z.string().trim().min(1).max(128), subject: adminSubjectSchema }),
        response: { 201: adminKeyRecord, ...adminErrors({ 404: 'not_found: no such partner or enterprise.' }) },
      },
      handler: async (req, reply) => reply.code(201).send(await createAdminKey(ctx, callerOf(req), req.body, writeOptionsOf(req))),
    });
    r.get('/admin-keys', {
      schema: {
        operationId: 'listAdminKeys',
        tags: ['admin keys'],
        summary: 'Admin keys within this one\u2019s subject, oldest first (never the keys themselves).',
        querystring: pageQuery,
        response: { 200: pageOf(adminKeyRecord), ...adminErrors() },
      },
      handler: (req) => listAdminKeys(ctx, callerOf(req), req.query),
    });
    r.post('/admin-keys/:id/revoke', {
      config: storedAnswer(200, same<AdminKeyRecord>),
      schema: {
        operationId: 'revokeAdminKey',
        tags: ['admin keys'],
        summary: 'Revoke an admin key: refused within seconds.',
        headers: idempotencyHeaders,
        params: keyPath,
        response: { 200: adminKeyRecord, ...adminErrors({ 404: 'not_found' }) },
      },
      handler: (req) => revokeAdminKey(ctx, callerOf(req), req.params.id, writeOptionsOf(req)),
    });
  };
