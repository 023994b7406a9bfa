import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { categoryCreateInput, categoryItem, categoryUpdateInput } from '../../../domain/categories/schema.js';
import { createCategory, updateCategory } from '../../../domain/categories/service.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { adminErrors, idParam } from './params.js';
import { storedAnswer } from './present.js';

const same = <T>(v: T) => v;

/** An organization's emergency categories. */
export const categoryAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const orgPath = z.object({ org_id: idParam });

    r.post('/orgs/:org_id/categories', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createCategory',
        tags: ['tenancy'],
        summary: 'Create a category of an organization.',
        headers: idempotencyHeaders,
        params: orgPath,
        body: categoryCreateInput,
        response: {
          201: categoryItem,
          ...adminErrors({ 404: 'not_found: no such organization.', 409: 'conflict: the organization has a category of that name.' }),
        },
      },
      handler: async (req, reply) => reply.code(201).send(await createCategory(ctx, callerOf(req), req.params.org_id, req.body, writeOptionsOf(req))),
    });
    r.patch('/orgs/:org_id/categories/:category_id', {
      config: storedAnswer(200, same),
      schema: {
        operationId: 'updateCategory',
        tags: ['tenancy'],
        summary:
          "Change a category's name, color, severity, response level or acknowledgement deadline (ackDeadlineSeconds 5..3600, " +
          "overriding the organization's; null: the organization's). Uncategorized is immutable: 409.",
        headers: idempotencyHeaders,
        params: orgPath.extend({ category_id: idParam }),
        body: categoryUpdateInput,
        response: {
          200: categoryItem,
          ...adminErrors({ 404: 'not_found: no such organization or category.', 409: 'conflict: Uncategorized is immutable, or the name is taken.' }),
        },
      },
      handler: (req) => updateCategory(ctx, callerOf(req), req.params.org_id, req.params.category_id, req.body, writeOptionsOf(req)),
    });
  };
