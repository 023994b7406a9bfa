import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppContext } from '../../../context.js';
import { createPartner, listPartners, nameInput, partnerPage, partnerRecord } from '../../../domain/orgs/service.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { adminErrors } from './params.js';
import { pageQuery } from '../params.js';
import { storedAnswer } from './present.js';

const same = <T>(v: T) => v;

/** Partners, the top of the tenant tree. */
export const partnerAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.post('/partners', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createPartner',
        tags: ['tenancy'],
        summary: 'Create a partner (instance admin keys only).',
        headers: idempotencyHeaders,
        body: nameInput,
        response: { 201: partnerRecord, ...adminErrors() },
      },
      handler: async (req, reply) => reply.code(201).send(await createPartner(ctx, callerOf(req), req.body, writeOptionsOf(req))),
    });
    r.get('/partners', {
      schema: {
        operationId: 'listPartners',
        tags: ['tenancy'],
        summary: 'The partners this admin key reaches, by name.',
        querystring: pageQuery,
        response: { 200: partnerPage, ...adminErrors() },
      },
      handler: (req) => listPartners(ctx, callerOf(req), req.query),
    });
  };
