import { randomUUID } from 'node:crypto';
import fastifySwagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from './context.js';
import { migrationsApplied } from './db/migrate.js';
import { API_VERSION } from './domain/events/append.js';
import { KeyAuthenticator } from './domain/keys/authenticator.js';
import { ADMIN_KEYS, type KeyGate, PUBLIC_API_KEYS, requireKey } from './edge/auth.js';
import { adminDocument, type OpenApiDocument, publicDocument } from './http/openapi-documents.js';
import { credentialAdminRoutes } from './http/routes/admin/credentials.js';
import { deliveryAdminRoutes } from './http/routes/admin/delivery.js';
import { tenancyAdminRoutes } from './http/routes/admin/tenancy.js';
import { idempotentRoutes } from './edge/idempotency.js';
import { appendRouteHook } from './edge/route-hooks.js';
import { AppError } from './errors.js';
import fastifyCors from '@fastify/cors';
import { consolePage } from './http/console-page.js';
import { docsPage } from './http/docs-page.js';
import { loggerOptions } from './observability/log-format.js';
import { errorResponse } from './http/error-schemas.js';
import { installErrorHandling } from './http/errors-plugin.js';
import { clientErrorHandler, frameworkErrorHandler } from './http/framework-errors.js';
import { directoryRoutes } from './http/routes/directory.js';
import { emergencyRoutes } from './http/routes/emergencies.js';
import { feedRoutes } from './http/routes/feed.js';
import { RateLimiter } from './edge/rate-limit.js';
import { messageRoutes } from './http/routes/messages.js';
import { zodValidatorCompiler } from './http/validation.js';
import { mcpRoutes } from './mcp/plugin.js';
import { DeferredChildLogger } from './observability/deferred-logger.js';

export const API_PREFIX = '/api/public/v1';

/** Whether an Accept header admits JSON (absent, `*\/*`, `application/*` or `application/json`). */
function acceptsJson(accept: string | undefined): boolean {
  if (!accept) return true;
  return accept.split(',').some((part) => {
    const [type, ...params] = part.trim().toLowerCase().split(';');
    const refused = params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p));
    return !refused && (type === '*/*' || type === 'application/*' || type === 'application/json');
  });
}
export const ADMIN_PREFIX = '/api/admin/v1';
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** /readyz answers within this time whatever the database does. */
const READINESS_TIMEOUT_MS = 1000;

/** Kept here for the callers that build the app and its context together. */
export { createContext } from './create-context.js';

export type AppServices = KeyGate;

/** Builds the HTTP application (REST v1, health); used by `serve` and by every test. */
export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    logger: ctx.config.LOG_LEVEL === 'silent' ? false : loggerOptions(ctx.config),
    bodyLimit: 1024 * 1024,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    // Request loggers are created lazily (see DeferredChildLogger); without a logger there is nothing to defer.
    ...(ctx.config.LOG_LEVEL === 'silent'
      ? {}
      : {
          childLoggerFactory: (logger: FastifyBaseLogger, bindings: Record<string, unknown>, options: object) =>
            Object.keys(options).length > 0
              ? logger.child(bindings, options)
              : new DeferredChildLogger(logger as FastifyBaseLogger & { isLevelEnabled(level: string): boolean }, bindings),
        }),
    requestTimeout: 30_000,
    // Above Node's 16 KiB header limit, so no path parameter is refused for its length by the router:
    // an emergency id of any length reaches its route and is a 404 when it names no emergency.
    routerOptions: { maxParamLength: 16 * 1024 },
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler,
    keepAliveTimeout: 72_000,
    return503OnClosing: true,
  });
  const keys = new KeyAuthenticator(ctx);
  const rateLimiter = new RateLimiter(ctx.config.RATE_LIMIT_PER_KEY);
  const authFailures = new RateLimiter(ctx.config.AUTH_FAILURES_PER_ADDRESS, ctx.config.AUTH_FAILURES_PER_ADDRESS * 5);
  const gate: KeyGate = { keys, rateLimiter, authFailures };
  app.decorate('services', gate satisfies AppServices);
  app.decorateRequest('principal', null);
  app.decorateRequest('idempotency', null);
  app.setValidatorCompiler(zodValidatorCompiler);
  // Responses are built by the services from typed records; the schemas document them, and plain
  // JSON.stringify avoids validating every response on the hot path.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  // Only JSON bodies are accepted; text/plain would otherwise be parsed as a string.
  app.removeContentTypeParser('text/plain');
  if (app.log) ctx.dbOutage.attach(app.log);
  installErrorHandling(app, ctx);
  // Callback-style hooks: an async hook costs a promise per request on every route.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  // Each route records its own requests under its URL pattern, known when it is registered (reading
  // request.routeOptions would build an object of the route's options on every request); the
  // instance-wide hook records only requests that matched no route.
  app.addHook('onRoute', (route) => {
    appendRouteHook(route, 'onResponse', (request, reply, done) => {
      ctx.metrics.recordHttp(request.method, route.url, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) ctx.metrics.recordHttp(request.method, 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Emergency Notification Public API',
        version: API_VERSION,
        description:
          'Declare, re-categorize, resolve and read emergencies; post messages; read categories, users and the audit log. ' +
          'Every request except GET /openapi.json carries Authorization: Bearer <API_KEY>. Every response carries X-Request-Id.',
      },
      servers: [{ url: API_PREFIX }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'enk_live_ + 8 hex + 64 hex' } } },
      security: [{ bearer: [] }],
    },
    transform: (input) => {
      const out = jsonSchemaTransform(input);
      return { ...out, url: out.url.startsWith(API_PREFIX) ? out.url.slice(API_PREFIX.length) || '/' : out.url };
    },
    transformObject: jsonSchemaTransformObject,
  });

  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) =>
    reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics()),
  );
  if (ctx.config.CORS_ORIGINS.length > 0) {
    // Browsers on these origins may call the APIs with a key (never cookies); off unless configured.
    await app.register(fastifyCors, {
      origin: ctx.config.CORS_ORIGINS.includes('*') ? '*' : ctx.config.CORS_ORIGINS,
      methods: ['GET', 'POST', 'PATCH', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id', 'Accept'],
      exposedHeaders: ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'Idempotent-Replayed', 'Location'],
      maxAge: 600,
    });
  }
  await app.register(docsPage);
  await app.register(consolePage());
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    // Bounded: a database that hangs must not hang the probe (the check itself gives up on its own
    // timeouts later; nothing waits for it here).
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

  // Each API: its OpenAPI document (no authentication), then its routes behind its keys and Idempotency-Key.
  const surfaces = [
    {
      prefix: API_PREFIX,
      name: 'public',
      keys: PUBLIC_API_KEYS,
      document: publicDocument,
      routes: [emergencyRoutes, directoryRoutes, feedRoutes, messageRoutes],
    },
    {
      prefix: ADMIN_PREFIX,
      name: 'admin',
      keys: ADMIN_KEYS,
      document: adminDocument,
      routes: [tenancyAdminRoutes, credentialAdminRoutes, deliveryAdminRoutes],
    },
  ];
  for (const surface of surfaces) {
    await app.register(
      async (api) => {
        api.withTypeProvider<ZodTypeProvider>().get(
          '/openapi.json',
          {
            schema: {
              operationId: surface.name === 'public' ? 'getOpenApiDocument' : 'getAdminOpenApiDocument',
              tags: ['meta'],
              summary: `This OpenAPI 3.1 description of the ${surface.name} API (no authentication).`,
              security: [],
              response: {
                200: z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) }).describe('The OpenAPI 3.1 document.'),
                406: errorResponse.describe('not_acceptable: the Accept header excludes application/json.'),
              },
            },
          },
          async (request) => {
            if (!acceptsJson(request.headers.accept)) throw new AppError('not_acceptable', 'This document is served as application/json only.');
            return surface.document(app.swagger() as unknown as OpenApiDocument);
          },
        );
        await api.register(async (authed) => {
          authed.addHook('onRequest', requireKey(gate, surface.keys));
          idempotentRoutes(authed, ctx.db);
          for (const routes of surface.routes) await authed.register(routes(ctx));
        });
      },
      { prefix: surface.prefix },
    );
  }
  await app.register(mcpRoutes(ctx, gate));

  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    services: AppServices;
  }
}
