import { createHash, timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyPluginAsync } from 'fastify';
import type { Config } from '../config.js';
import type { AppContext } from '../context.js';
import { bearerToken } from '../edge/auth.js';
import { AuthThrottle } from '../edge/auth-throttle.js';
import { AppError } from '../errors.js';
import { installErrorHandling } from './errors-plugin.js';

/**
 * `GET /metrics` is never served to anonymous clients on the API's port (extensions §9): it is served
 * on a listener of its own (METRICS_PORT, on METRICS_HOST), or on the API port with a bearer token
 * (METRICS_TOKEN). With neither, no port serves it.
 */

/** Whether the API port serves /metrics: behind METRICS_TOKEN, and only while no metrics listener is configured. */
export function metricsOnApiPort(config: Config): boolean {
  return config.METRICS_PORT === undefined && config.METRICS_TOKEN !== undefined;
}

/** Compares SHA-256 digests, so the comparison takes the same time whatever the presented token. */
function tokenMatches(expected: string, authorization: string | undefined): boolean {
  const presented = bearerToken(authorization);
  if (presented === undefined) return false;
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(presented), digest(expected));
}

/** The route: the Prometheus text, to the holder of METRICS_TOKEN when one is set; failures are throttled per address like keys. */
export function metricsRoute(ctx: AppContext, authFailures: AuthThrottle): FastifyPluginAsync {
  return async (app) => {
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      const token = ctx.config.METRICS_TOKEN;
      if (token !== undefined && !tokenMatches(token, request.headers.authorization)) {
        const decision = authFailures.failed(request.ip, 'metrics');
        if (!decision.allowed) {
          reply.header('retry-after', decision.retryAfterSeconds);
          throw new AppError('rate_limited', `Too many failed authentications from this address; retry after ${decision.retryAfterSeconds} s.`);
        }
        throw new AppError('unauthenticated', 'The metrics token is required: Authorization: Bearer <METRICS_TOKEN>.');
      }
      return reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
    });
  };
}

export interface MetricsListener {
  /** e.g. http://127.0.0.1:9464 */
  url: string;
  stop(): Promise<void>;
}

/** The listener of METRICS_PORT: /metrics only (every other path 404), apart from the API's connections and limits. */
export async function startMetricsListener(ctx: AppContext): Promise<MetricsListener | null> {
  const { METRICS_PORT: port, METRICS_HOST: host, AUTH_FAILURES_PER_ADDRESS: failures } = ctx.config;
  if (port === undefined) return null;
  const app = Fastify({ logger: false, requestTimeout: 30_000 });
  installErrorHandling(app, ctx);
  await app.register(metricsRoute(ctx, new AuthThrottle(failures)));
  // Exclusive: each process of `serve --processes N` holds a metrics port of its own rather than one shared through
  // the supervisor, so that each can be scraped on its own (with METRICS_PORT=0, each on a free port).
  await app.listen({ port, host, exclusive: true });
  const address = app.server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`, stop: () => app.close() };
}
