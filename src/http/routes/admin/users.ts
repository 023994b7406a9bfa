import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { userCreateInput, userItem, userUpdateInput } from '../../../domain/users/schema.js';
import { createUser, updateUser } from '../../../domain/users/service.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { adminErrors, idParam } from './params.js';
import { storedAnswer } from './present.js';

const same = <T>(v: T) => v;

/** An organization's users. */
export const userAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const orgPath = z.object({ org_id: idParam });

    r.post('/orgs/:org_id/users', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createUser',
        tags: ['tenancy'],
        summary: 'Add a user to an organization.',
        headers: idempotencyHeaders,
        params: orgPath,
        body: userCreateInput,
        response: { 201: userItem, ...adminErrors({ 404: 'not_found: no such organization.', 409: 'conflict: the email is taken in this organization.' }) },
      },
      handler: async (req, reply) => reply.code(201).send(await createUser(ctx, callerOf(req), req.params.org_id, req.body, writeOptionsOf(req))),
    });
    r.patch('/orgs/:org_id/users/:user_id', {
      config: storedAnswer(200, same),
      schema: {
        operationId: 'updateUser',
        tags: ['tenancy'],
        summary: "Change a user's names, email, phone, role, access level or status.",
        headers: idempotencyHeaders,
        params: orgPath.extend({ user_id: idParam }),
        body: userUpdateInput,
        response: { 200: userItem, ...adminErrors({ 404: 'not_found: no such organization or user.', 409: 'conflict: the email is taken.' }) },
      },
      handler: (req) => updateUser(ctx, callerOf(req), req.params.org_id, req.params.user_id, req.body, writeOptionsOf(req)),
    });
  };
