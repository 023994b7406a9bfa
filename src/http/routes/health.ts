import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.js';
import { migrationsApplied } from '../../db/migrate.js';

/** /readyz answers within this time whatever the database does. */
const READINESS_TIMEOUT_MS = 1000;

/** Liveness (the process answers) and readiness (the database answers and is migrated), for load balancers. */
export const healthRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
    app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
      // A database that hangs must not hang the probe: the check is raced against a timer.
      let timer: NodeJS.Timeout | undefined;
      const tooSlow = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), READINESS_TIMEOUT_MS);
      });
      const check = migrationsApplied(ctx.db).then(
        (applied) => (applied ? 'ready' : 'unmigrated'),
        () => 'unreachable' as const,
      );
      const verdict = await Promise.race([check, tooSlow]);
      clearTimeout(timer);
      if (verdict === 'ready') return { status: 'ready' };
      const message =
        verdict === 'unmigrated'
          ? 'Database migrations are not applied.'
          : verdict === 'timeout'
            ? `The database did not answer within ${READINESS_TIMEOUT_MS} ms.`
            : 'The database is not reachable.';
      return reply
        .code(503)
        .header('retry-after', 2)
        .send({ detail: { error: 'unavailable', message } });
    });
  };
