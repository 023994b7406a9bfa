import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { createOrg, getOrg, listOrgs, nameInput, orgPage, orgRecord, orgUpdateInput, updateOrg } from '../../../domain/orgs/service.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { adminErrors, idParam } from './params.js';
import { pageQuery } from '../params.js';
import { storedAnswer } from './present.js';

const same = <T>(v: T) => v;

/** An enterprise's organizations, and one organization. */
export const orgAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const enterprisePath = z.object({ enterprise_id: idParam });
    const orgPath = z.object({ org_id: idParam });

    r.post('/enterprises/:enterprise_id/orgs', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createOrganization',
        tags: ['tenancy'],
        summary: 'Create an organization of an enterprise, with its Uncategorized category.',
        headers: idempotencyHeaders,
        params: enterprisePath,
        body: nameInput,
        response: { 201: orgRecord, ...adminErrors({ 404: 'not_found: no such enterprise.' }) },
      },
      handler: async (req, reply) => reply.code(201).send(await createOrg(ctx, callerOf(req), req.params.enterprise_id, req.body, writeOptionsOf(req))),
    });
    r.get('/enterprises/:enterprise_id/orgs', {
      schema: {
        operationId: 'listOrganizations',
        tags: ['tenancy'],
        summary: "An enterprise's organizations, by name.",
        params: enterprisePath,
        querystring: pageQuery,
        response: { 200: orgPage, ...adminErrors({ 404: 'not_found: no such enterprise.' }) },
      },
      handler: (req) => listOrgs(ctx, callerOf(req), req.params.enterprise_id, req.query),
    });
    r.get('/orgs/:org_id', {
      schema: {
        operationId: 'getOrganization',
        tags: ['tenancy'],
        summary: 'One organization.',
        params: orgPath,
        response: { 200: orgRecord, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: (req) => getOrg(ctx, callerOf(req), req.params.org_id),
    });
    r.patch('/orgs/:org_id', {
      config: storedAnswer(200, same),
      schema: {
        operationId: 'updateOrganization',
        tags: ['tenancy'],
        summary: 'Rename an organization or set its acknowledgement deadline (ackDeadlineSeconds 5..3600, null: off).',
        description:
          'With a deadline, every emergency event (declared, categorized, resolved) that a targeted base station has not acknowledged ' +
          'by then is followed by one emergency.delivery_overdue naming the silent stations, and once they all acknowledge by one ' +
          'emergency.delivery_completed. Half-way, the event is sent again to the connected stations that have not acknowledged it. ' +
          'A category may override the deadline. It applies to events written after the change.',
        headers: idempotencyHeaders,
        params: orgPath,
        body: orgUpdateInput,
        response: { 200: orgRecord, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: (req) => updateOrg(ctx, callerOf(req), req.params.org_id, req.body, writeOptionsOf(req)),
    });
  };
