import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { createEnterprise, enterprisePage, enterpriseRecord, listEnterprises, nameInput } from '../../../domain/orgs/service.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { adminErrors, idParam } from './params.js';
import { pageQuery } from '../params.js';
import { storedAnswer } from './present.js';

const same = <T>(v: T) => v;

/** A partner's enterprises. */
export const enterpriseAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const partnerPath = z.object({ partner_id: idParam });
    r.post('/partners/:partner_id/enterprises', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createEnterprise',
        tags: ['tenancy'],
        summary: 'Create an enterprise of a partner.',
        headers: idempotencyHeaders,
        params: partnerPath,
        body: nameInput,
        response: { 201: enterpriseRecord, ...adminErrors({ 404: 'not_found: no such partner.' }) },
      },
      handler: async (req, reply) => reply.code(201).send(await createEnterprise(ctx, callerOf(req), req.params.partner_id, req.body, writeOptionsOf(req))),
    });
    r.get('/partners/:partner_id/enterprises', {
      schema: {
        operationId: 'listEnterprises',
        tags: ['tenancy'],
        summary: "A partner's enterprises, by name (an enterprise admin key sees its own).",
        params: partnerPath,
        querystring: pageQuery,
        response: { 200: enterprisePage, ...adminErrors({ 404: 'not_found: no such partner.' }) },
      },
      handler: (req) => listEnterprises(ctx, callerOf(req), req.params.partner_id, req.query),
    });
  };
