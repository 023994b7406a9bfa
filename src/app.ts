import fastifyCors from '@fastify/cors';
import fastifySwagger from '@fastify/swagger';
import Fastify, { type FastifyInstance } from 'fastify';
import type { AppContext } from './context.js';
import { isDatabaseUnavailable } from './db/unavailable.js';
import { authorize } from './domain/access/authorize.js';
import { KeyAuthenticator } from './domain/keys/authenticator.js';
import { credentialPrefixPages } from './domain/access/credential-prefixes.js';
import type { KeyGate } from './edge/auth.js';
import { AuthThrottle } from './edge/auth-throttle.js';
import { ClientAddresses, proxyTrust } from './edge/client-address.js';
import { ConnectionIntake } from './edge/connection-intake.js';
import { ConnectionBudget, openFileLimit } from './edge/connection-budget.js';
import { PrefixIndex } from './edge/prefix-index.js';
import { RateLimiter } from './edge/rate-limit.js';
import { TenantConnections } from './edge/tenant-connections.js';
import { registerApis } from './http/apis.js';
import { consolePage } from './http/console-page.js';
import { docsPage } from './http/docs-page.js';
import { installErrorHandling } from './http/errors-plugin.js';
import { BrowserStreams, defaultStreamLimits, type StreamLimits } from './http/event-stream.js';
import { metricsOnApiPort, metricsRoute } from './http/metrics-endpoint.js';
import { openApiOptions } from './http/openapi-generator.js';
import { recordRequestMetrics } from './http/request-metrics.js';
import { healthRoutes } from './http/routes/health.js';
import { serverOptions } from './http/server-options.js';
import { zodValidatorCompiler } from './http/validation.js';
import { mcpRoutes } from './mcp/plugin.js';
import { oauthOffered, oauthRoutes, protectedResourceRoutes } from './mcp/oauth/routes.js';
import { toolServerCredentials as oauthCredentials } from './domain/oauth/grants.js';
import type { RoleParts } from './roles.js';

export { ADMIN_PREFIX, API_PREFIX } from './http/prefixes.js';

/** Kept here for the callers that build the app and its context together. */
export { createContext } from './create-context.js';

export interface AppServices extends KeyGate {
  /** The org event streams (SSE) of this process, with their limits. */
  streams: BrowserStreams;
  /** What the long-lived connections (event streams, device sockets) may hold of the open-file limit. */
  connections: ConnectionBudget;
  /** The long-lived connections by org and partner, for their quotas and share of the instance. */
  tenants: TenantConnections;
}

/** Internal knobs of the application (not configuration): tests shorten timings with them. */
export interface AppOptions {
  streams?: Partial<Omit<StreamLimits, 'perKey' | 'max'>>;
  /** The routes of this process's role (src/roles.ts); everything by default. */
  parts?: Pick<RoleParts, 'apis' | 'eventStreams'>;
}

/** Builds the HTTP application (REST v1, health); used by `serve` and by every test. */
export async function buildApp(ctx: AppContext, options: AppOptions = {}): Promise<FastifyInstance> {
  const addresses = new ClientAddresses(proxyTrust(ctx.config.TRUST_PROXY));
  const app = Fastify(serverOptions(ctx.config, addresses));
  const keys = new KeyAuthenticator(ctx);
  const gate: KeyGate = {
    keys,
    rateLimiter: new RateLimiter(ctx.config.RATE_LIMIT_PER_KEY),
    authFailures: new AuthThrottle(ctx.config.AUTH_FAILURES_PER_ADDRESS, new PrefixIndex(credentialPrefixPages(ctx))),
    addresses,
    intake: ConnectionIntake.install(app.server, addresses, {
      unauthenticatedPerAddress: ctx.config.UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS,
      firstBytesTimeoutMs: ctx.config.HEADERS_TIMEOUT_MS,
      proxyProtocol: ctx.config.PROXY_PROTOCOL,
    }),
  };
  // The last file descriptors are kept for the database and files: a flood of connections is refused
  // at the door rather than failing everything else.
  const fileLimit = openFileLimit();
  if (fileLimit !== null) app.server.maxConnections = fileLimit - Math.min(64, Math.floor(fileLimit / 16));
  const connections = ConnectionBudget.ofProcess();
  const tenants = new TenantConnections(connections, ctx.config.TENANT_CONNECTION_SHARE);
  const streams = new BrowserStreams(
    ctx.eventLog,
    {
      reverify: (token) => keys.authenticateFresh(token),
      authorize: (principal, orgId) => authorize(ctx, { principal, requestId: null }, orgId, 'events:read'),
    },
    connections,
    tenants,
    { ...defaultStreamLimits, ...options.streams, perKey: ctx.config.STREAMS_PER_KEY, max: ctx.config.MAX_STREAMS },
    (err, where) => {
      if (isDatabaseUnavailable(err)) ctx.dbOutage.failed(err);
      else app.log.error({ err, where }, 'event stream failure; the next poll or check retries');
    },
  );
  // Before the server waits for open connections: a stream never ends on its own.
  app.addHook('preClose', (done) => {
    streams.close();
    done();
  });
  app.decorate('services', { ...gate, streams, connections, tenants } satisfies AppServices);
  app.decorateRequest('principal', null);
  app.decorateRequest('idempotency', null);
  app.setValidatorCompiler(zodValidatorCompiler);
  // The schemas document the responses; plain JSON.stringify avoids validating each one on the hot path.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  // Only JSON bodies are accepted; text/plain would otherwise be parsed as a string.
  app.removeContentTypeParser('text/plain');
  if (app.log) ctx.dbOutage.attach(app.log);
  installErrorHandling(app, ctx);
  // Callback style: an async hook costs a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  recordRequestMetrics(app, ctx.metrics);

  await app.register(fastifySwagger, openApiOptions);
  // Never to anonymous clients on this port: with METRICS_TOKEN only, and not at all once METRICS_PORT gives it a listener.
  if (metricsOnApiPort(ctx.config)) await app.register(metricsRoute(ctx, gate.authFailures));
  if (ctx.config.CORS_ORIGINS.length > 0) await app.register(fastifyCors, corsOptions(ctx.config.CORS_ORIGINS));
  const parts = options.parts ?? { apis: true, eventStreams: true };
  if (parts.apis) {
    await app.register(docsPage);
    await app.register(consolePage({ sandbox: ctx.config.SANDBOX }));
  }
  await app.register(healthRoutes(ctx));
  await registerApis(app, ctx, gate, parts);
  if (parts.apis) {
    // The tool server also takes the access tokens of its authorization server (extensions §10); REST keeps API keys.
    const toolServerCredentials = new KeyAuthenticator(ctx, oauthCredentials(ctx));
    await app.register(mcpRoutes(ctx, { ...gate, keys: toolServerCredentials }));
    if (oauthOffered(ctx.config)) await app.register(protectedResourceRoutes(ctx.config));
    if (ctx.config.OAUTH_ENABLED) await app.register(oauthRoutes(ctx, gate, toolServerCredentials));
  }
  return app;
}

/** Browsers on these origins may call the APIs with a key (never cookies); off unless configured. */
function corsOptions(origins: string[]) {
  return {
    origin: origins.includes('*') ? '*' : origins,
    methods: ['GET', 'POST', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id', 'Accept'],
    exposedHeaders: ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'Idempotent-Replayed', 'Location'],
    maxAge: 600,
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    services: AppServices;
  }
}
