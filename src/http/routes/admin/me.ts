import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppContext } from '../../../context.js';
import { whoAmI, whoAmIRecord } from '../../../domain/access/who-am-i.js';
import { callerOf } from '../../../edge/auth.js';
import { adminErrors } from './params.js';

/** The calling admin key itself. */
export const meAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.get('/me', {
      schema: {
        operationId: 'getAdminMe',
        tags: ['admin keys'],
        summary: 'The admin key making the request: its id, name, subject and the organizations beneath that subject (any admin key).',
        description:
          '`orgs` lists the first 200 organizations beneath the key\u2019s subject by name, `orgsTotal` counts them all, and ' +
          '`orgsNextCursor`, when not null, continues the list with the public API\u2019s `GET /orgs?cursor=` (an admin key is accepted there).',
        response: { 200: whoAmIRecord, ...adminErrors() },
      },
      handler: (req) => whoAmI(ctx, callerOf(req)),
    });
  };
