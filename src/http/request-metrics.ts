import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../observability/metrics.js';
import { appendRouteHook } from '../edge/route-hooks.js';

/**
 * Records every request under its route's URL pattern. Each route gets its own hook, knowing its
 * pattern when registered (reading request.routeOptions would build an object per request); the
 * instance-wide hook records only requests that matched no route.
 */
export function recordRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onRoute', (route) => {
    appendRouteHook(route, 'onResponse', (request, reply, done) => {
      metrics.recordHttp(request.method, route.url, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) metrics.recordHttp(request.method, 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
