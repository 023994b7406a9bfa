import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { whoAmI, whoAmIRecord } from '../../domain/access/who-am-i.js';
import { callerOf } from '../../edge/auth.js';
import { errorResponses } from '../error-schemas.js';

/** The calling key itself. */
export const meRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.get('/me', {
      schema: {
        operationId: 'getMe',
        tags: ['organizations'],
        summary: 'The key making the request: its id, name, kind, permissions, subject and the organizations it covers (any valid key).',
        description:
          'Answers for an API key and for an admin key alike, so a client learns what it may do without trying a write. `orgs` lists ' +
          'the first 200 covered organizations by name, `orgsTotal` counts them all, and `orgsNextCursor`, when not null, continues ' +
          'the list with `GET /orgs?cursor=`.',
        response: { 200: whoAmIRecord, ...errorResponses() },
      },
      handler: (req) => whoAmI(ctx, callerOf(req)),
    });
  };
