import { authorizationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js';
import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import type { AppContext } from '../../context.js';
import type { KeyAuthenticator } from '../../domain/keys/authenticator.js';
import { OAuthClients } from '../../domain/oauth/clients.js';
import { addressGroupOf } from '../../edge/client-address.js';
import type { KeyGate } from '../../edge/auth.js';
import { RateLimiter } from '../../edge/rate-limit.js';
import { AUTHORIZATION_SERVER_PATH, PROTECTED_RESOURCE_PATH, publicOrigin } from './origin.js';
import { type ConsentSignIn, ToolServerAuthProvider } from './provider.js';
import { SCOPES } from './scopes.js';

const ENDPOINTS = { authorize: '/oauth/authorize', token: '/oauth/token', register: '/oauth/register', revoke: '/oauth/revoke' } as const;

/** RFC 8414: where everything is, and what this server does (public clients, code + PKCE S256, refresh, revocation). */
export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}${ENDPOINTS.authorize}`,
    token_endpoint: `${issuer}${ENDPOINTS.token}`,
    registration_endpoint: `${issuer}${ENDPOINTS.register}`,
    revocation_endpoint: `${issuer}${ENDPOINTS.revoke}`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: SCOPES,
    client_id_metadata_document_supported: true,
    service_documentation: `${issuer}/docs`,
  };
}

/** RFC 9728: the tool server, and who issues its tokens (this server, an enterprise's own issuer, or both). */
export function protectedResourceMetadata(origin: string, config: Pick<Config, 'OAUTH_ENABLED' | 'OAUTH_ISSUER'>) {
  return {
    resource: `${origin}/mcp`,
    authorization_servers: [...(config.OAUTH_ENABLED ? [origin] : []), ...(config.OAUTH_ISSUER ? [config.OAUTH_ISSUER] : [])],
    scopes_supported: SCOPES,
    bearer_methods_supported: ['header'],
    resource_name: 'Emergency API tool server',
    resource_documentation: `${origin}/docs`,
  };
}

/** Whether the tool server takes OAuth access tokens at all, from this server or an external issuer. */
export const oauthOffered = (config: Pick<Config, 'OAUTH_ENABLED' | 'OAUTH_ISSUER'>): boolean => config.OAUTH_ENABLED || config.OAUTH_ISSUER !== undefined;

/** Public documents: browser-based clients (the MCP Inspector) read them from their own origin. */
const METADATA_HEADERS = { 'cache-control': 'max-age=300', 'access-control-allow-origin': '*' };

/** RFC 9728's document, served whenever the tool server takes OAuth tokens. */
export const protectedResourceRoutes =
  (config: Config): FastifyPluginAsync =>
  async (app) => {
    app.get(PROTECTED_RESOURCE_PATH, { schema: { hide: true } }, async (request, reply) =>
      reply.headers(METADATA_HEADERS).send(protectedResourceMetadata(publicOrigin(config, request.raw), config)),
    );
  };

/** The consent page's sign-in: API keys only, with failed attempts throttled per address as everywhere else. */
function consentSignIn(gate: KeyGate): ConsentSignIn {
  return async (request, apiKey) => {
    const address = gate.addresses.of(request);
    const prefix = gate.keys.idOf(apiKey);
    if (prefix !== undefined && (await gate.authFailures.lookupRefusal(address, prefix, gate.keys.knowsKeyIdOf(apiKey)))) return 'throttled';
    const principal = prefix === undefined ? null : await gate.keys.authenticate(apiKey);
    if (principal?.kind === 'api_key' && !principal.oauth) return principal;
    return gate.authFailures.failed(address, prefix).allowed ? 'invalid' : 'throttled';
  };
}

/** Express answers the SDK's handlers' own failures (a body that is not JSON or form data, or too big) as OAuth errors. */
function oauthErrors(err: unknown, _req: Request, res: Response, _next: NextFunction): void {
  const status = (err as { status?: unknown }).status;
  const code = typeof status === 'number' && status >= 400 && status < 500 ? status : 400;
  if (res.headersSent) return void res.end();
  res
    .status(code)
    .json({ error: 'invalid_request', error_description: code === 413 ? 'The request body is too large.' : 'The request body could not be read.' });
}

/**
 * The embedded authorization server of the tool server (extensions §10): metadata (RFC 9728, RFC 8414), and the MCP SDK's
 * authorize, token, registration and revocation handlers behind `ToolServerAuthProvider`. Those handlers are Express
 * routers; their requests leave Fastify's pipeline unread, and Express reads and answers them.
 */
export const oauthRoutes =
  (ctx: AppContext, gate: KeyGate, credentials: KeyAuthenticator): FastifyPluginAsync =>
  async (app: FastifyInstance) => {
    const { config } = ctx;
    const clients = new OAuthClients(ctx);
    app.addHook('onClose', async () => clients.close());
    const provider = new ToolServerAuthProvider(ctx, clients, consentSignIn(gate), credentials, {
      accessSeconds: config.OAUTH_ACCESS_TOKEN_SECONDS,
      refreshSeconds: config.OAUTH_REFRESH_TOKEN_DAYS * 24 * 3600,
    });
    const server = express();
    server.disable('x-powered-by');
    server.set('env', 'production');
    // This service's own per-address limit applies (below); the handlers' in-memory ones would be per process and per handler.
    server.use(ENDPOINTS.authorize, authorizationHandler({ provider, rateLimit: false }));
    server.use(ENDPOINTS.token, tokenHandler({ provider, rateLimit: false }));
    server.use(ENDPOINTS.register, clientRegistrationHandler({ clientsStore: provider.clientsStore, rateLimit: false, clientIdGeneration: false }));
    server.use(ENDPOINTS.revoke, revocationHandler({ provider, rateLimit: false }));
    server.use(oauthErrors);

    const perAddress = new RateLimiter(config.OAUTH_REQUESTS_PER_ADDRESS, config.OAUTH_REQUESTS_PER_ADDRESS * 10);
    const handOver = (request: FastifyRequest, reply: FastifyReply) => {
      const decision = perAddress.take(addressGroupOf(gate.addresses.of(request.raw)));
      if (!decision.allowed) {
        return reply
          .code(429)
          .header('retry-after', decision.retryAfterSeconds)
          .header('cache-control', 'no-store')
          .send({ error: 'too_many_requests', error_description: `Too many requests from this address; retry after ${decision.retryAfterSeconds} s.` });
      }
      reply.hijack();
      server(request.raw, reply.raw);
    };

    app.get(AUTHORIZATION_SERVER_PATH, { schema: { hide: true } }, async (request, reply) =>
      reply.headers(METADATA_HEADERS).send(authorizationServerMetadata(publicOrigin(config, request.raw))),
    );
    await app.register(async (scope) => {
      // The body is left for Express to read.
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
      for (const url of Object.values(ENDPOINTS)) {
        scope.route({ method: ['GET', 'HEAD', 'POST', 'OPTIONS', 'PUT', 'PATCH', 'DELETE'], url, schema: { hide: true }, handler: handOver });
      }
    });
  };
