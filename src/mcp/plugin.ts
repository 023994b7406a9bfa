import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { AppError } from '../errors.js';
import { callerOf, type KeyGate, requireKey, TOOL_SERVER_KEYS } from '../edge/auth.js';
import { enforceRateLimit } from '../edge/rate-limit.js';
import { directCall, SingleResponseTransport } from './direct-call.js';
import { foreignOriginRefusal } from './origin-check.js';
import { MCP_PATH, mcpResourceOf, PROTECTED_RESOURCE_PATH, publicOrigin } from './oauth/origin.js';
import { oauthOffered } from './oauth/routes.js';
import { createToolServer, type McpAuthExtra, ToolServerPool } from './server.js';
import { type McpSession, McpSessions } from './sessions.js';
import { TOOLS } from './tools.js';
import { ResourceSubscriptions } from './subscriptions.js';

export { MCP_PATH };

/** Marks a body that is not JSON, so it is answered with a JSON-RPC parse error rather than the REST 422. */
const INVALID_JSON = Symbol('invalid JSON');

/** Requests that only a session can serve: the rest of a session's requests take the stateless path. */
const SESSION_METHODS = new Set(['resources/subscribe', 'resources/unsubscribe', 'logging/setLevel']);

/** Only the headers the transport reads; copying every header into a web Request costs time on each call. */
const FORWARDED_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'] as const;

function jsonRpcError(reply: FastifyReply, status: number, code: number, message: string) {
  return reply
    .code(status)
    .type('application/json')
    .send(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** The first protocol version without JSON-RPC batching; versions are dates, so they compare as strings. */
const FIRST_VERSION_WITHOUT_BATCHES = '2025-06-18';

/** Why a JSON-RPC batch is refused, or null: batches exist only before FIRST_VERSION_WITHOUT_BATCHES, named by the header or an `initialize` in the batch. */
export function batchRefusal(versionHeader: string | string[] | undefined, batch: unknown[]): string | null {
  const versions = [typeof versionHeader === 'string' ? versionHeader : undefined];
  for (const message of batch) {
    const m = message as { method?: unknown; params?: { protocolVersion?: unknown } } | null;
    if (m?.method === 'initialize' && typeof m.params?.protocolVersion === 'string') versions.push(m.params.protocolVersion);
  }
  const batchless = versions.find((v) => v !== undefined && v >= FIRST_VERSION_WITHOUT_BATCHES);
  return batchless ? `Invalid Request: protocol version ${batchless} has no JSON-RPC batches; send one message per request.` : null;
}

/**
 * Clients must accept both a JSON body and an SSE stream; the stream is chosen only when the client ranks text/event-stream
 * above application/json (by q-value, then by order).
 */
export function prefersEventStream(accept: string | undefined): boolean {
  if (!accept) return false;
  let json: { q: number; at: number } | undefined;
  let sse: { q: number; at: number } | undefined;
  accept.split(',').forEach((part, at) => {
    const [type, ...params] = part.trim().toLowerCase().split(';');
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    const entry = { q: Number.isFinite(q) ? q : 0, at };
    if (type?.trim() === 'application/json') json ??= entry;
    else if (type?.trim() === 'text/event-stream') sse ??= entry;
  });
  if (!sse || sse.q <= 0) return false;
  if (!json || json.q <= 0) return true;
  return sse.q > json.q || (sse.q === json.q && sse.at < json.at);
}

function authInfoOf(request: FastifyRequest): AuthInfo {
  const principal = request.principal;
  if (principal?.kind !== 'api_key') throw new AppError('unauthenticated', 'A valid API key is required.');
  const extra: McpAuthExtra = { caller: callerOf(request), permissions: principal.permissions };
  // The key itself is never copied here: it is not needed past authentication.
  return { token: '', clientId: principal.keyId, scopes: [...principal.permissions], extra };
}

async function sendWebResponse(reply: FastifyReply, response: Response) {
  reply.code(response.status);
  response.headers.forEach((value, name) => void reply.header(name, value));
  if (!response.body) return reply.send();
  if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
    return reply.send(Readable.fromWeb(response.body as NodeReadableStream));
  }
  // Cheaper than Response.text() on Node's fetch implementation.
  const chunks: Uint8Array[] = [];
  for await (const chunk of response.body as NodeReadableStream<Uint8Array>) chunks.push(chunk);
  return reply.send(Buffer.concat(chunks));
}

const PERMISSION_OF_TOOL = new Map(TOOLS.map((tool) => [tool.name, tool.permission]));

/** The permission an OAuth client's tool call needs and its token lacks: it may ask the person for more (step-up). */
function scopeLacking(request: FastifyRequest): string | undefined {
  const principal = request.principal;
  if (principal?.kind !== 'api_key' || !principal.oauth) return undefined;
  const name = (request.body as { params?: { name?: unknown } } | null)?.params?.name;
  const needed = typeof name === 'string' ? PERMISSION_OF_TOOL.get(name) : undefined;
  return needed !== undefined && !principal.permissions.has(needed) ? needed : undefined;
}

/**
 * The stateless tool server at /mcp on the REST port. The key is checked in onRequest, so a bad one gets its 401 before the body is read;
 * the SDK's transport is driven directly so the reply stays in Fastify's pipeline (request id, logging, hooks).
 */
export const mcpRoutes =
  (ctx: AppContext, gate: KeyGate): FastifyPluginAsync =>
  async (app: FastifyInstance) => {
    const pool = new ToolServerPool(() => createToolServer(ctx, app.log));
    const { config } = ctx;
    const sessions = new McpSessions(
      {
        perKey: config.MCP_SESSIONS_PER_KEY,
        max: config.MCP_SESSIONS_MAX,
        idleMs: config.MCP_SESSION_IDLE_SECONDS * 1000,
        recheckMs: 2_000,
      },
      (token) => gate.keys.authenticateFresh(token),
      (err) => app.log.warn({ err }, 'tool server session check failed'),
    );
    app.addHook('onClose', async () => sessions.close());

    /** The session a request names, or its 404: unknown, ended, or another key's look alike. */
    const sessionOf = (request: FastifyRequest, reply: FastifyReply): McpSession | undefined => {
      const id = request.headers['mcp-session-id'];
      const principal = request.principal;
      const session = typeof id === 'string' && principal?.kind === 'api_key' ? sessions.find(id, principal.keyId) : undefined;
      if (!session) {
        void jsonRpcError(reply, 404, -32001, 'Session not found: it ended or expired. Send initialize again (without Mcp-Session-Id) for a new one.');
      }
      return session;
    };
    /** What the transport reads of a request; the web Request is built only where the SDK's transport needs one. */
    const forwardedOf = (request: FastifyRequest) => {
      const forwarded: Record<string, string> = {};
      for (const name of FORWARDED_HEADERS) {
        const value = request.headers[name];
        if (typeof value === 'string') forwarded[name] = value;
      }
      // The URL is only reported to handlers; the host header is not trusted for it.
      const url = new URL(request.url, 'http://localhost');
      return { forwarded, url };
    };
    const webRequestOf = (request: FastifyRequest, method: string) => {
      const { forwarded, url } = forwardedOf(request);
      return new Request(url, { method, headers: forwarded });
    };

    // Before the key: a page of another site is refused whatever credential its browser holds.
    app.addHook('onRequest', foreignOriginRefusal(ctx.config));
    app.addHook('onRequest', requireKey(gate, TOOL_SERVER_KEYS));
    // An access token works only at the resource it was issued for (RFC 8707): another server's URL is another audience.
    app.addHook('onRequest', async (request) => {
      const oauth = request.principal?.kind === 'api_key' ? request.principal.oauth : undefined;
      if (oauth && oauth.resource !== mcpResourceOf(config, request.raw)) {
        throw new AppError('unauthenticated', `This access token was issued for ${oauth.resource}, not for this server.`);
      }
    });
    // RFC 9728 §5.1: a client without a valid credential learns where to get one.
    app.addHook('onSend', (request, reply, payload, done) => {
      if (reply.statusCode === 401) {
        const metadata = `${publicOrigin(config, request.raw)}${PROTECTED_RESOURCE_PATH}`;
        const presented = request.headers.authorization !== undefined;
        reply.header(
          'www-authenticate',
          oauthOffered(config) ? `Bearer resource_metadata="${metadata}"${presented ? ', error="invalid_token"' : ''}` : 'Bearer',
        );
      }
      done(null, payload);
    });
    const parseJson = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) =>
      parseJson(request, body as string, (err, value) => done(null, err ? INVALID_JSON : value)),
    );

    app.post(MCP_PATH, { schema: { hide: true } }, async (request, reply) => {
      if (request.body === INVALID_JSON) return jsonRpcError(reply, 400, -32700, 'Parse error: the body is not valid JSON.');
      const authInfo = authInfoOf(request);
      if (Array.isArray(request.body)) {
        const refusal = batchRefusal(request.headers['mcp-protocol-version'], request.body);
        if (refusal) return jsonRpcError(reply, 400, -32600, refusal);
        // Each tool call of a batch costs what it would cost alone; the request itself paid for one.
        const calls = request.body.filter((message) => (message as { method?: unknown } | null)?.method === 'tools/call').length;
        if (calls > 1) enforceRateLimit(gate.rateLimiter, authInfo.clientId, reply, calls - 1);
      }
      const method = Array.isArray(request.body) ? undefined : (request.body as { method?: unknown } | null)?.method;
      const lacking = method === 'tools/call' ? scopeLacking(request) : undefined;
      if (lacking) {
        // RFC 6750 §3.1 and the MCP specification's scope challenge: the client may ask the person for this scope.
        const metadata = `${publicOrigin(config, request.raw)}${PROTECTED_RESOURCE_PATH}`;
        reply.header('www-authenticate', `Bearer error="insufficient_scope", scope="${lacking}", resource_metadata="${metadata}"`);
        return jsonRpcError(reply, 403, -32000, `Forbidden: this access token lacks the scope ${lacking}; sign in again asking for it.`);
      }
      const hasSession = request.headers['mcp-session-id'] !== undefined;
      if (method === 'initialize' && !hasSession) {
        const principal = request.principal as Extract<NonNullable<FastifyRequest['principal']>, { kind: 'api_key' }>;
        const token = request.headers.authorization?.replace(/^bearer\s+/i, '') ?? '';
        const opened = sessions.open(principal, token, (current) => {
          const subscriptions = new ResourceSubscriptions(
            ctx,
            (uri) => void server.server.sendResourceUpdated({ uri }).catch(() => undefined),
            (err) => {
              app.log.warn({ err }, 'tool server subscription read failed');
              void server.server
                .sendLoggingMessage({ level: 'warning', logger: 'subscriptions', data: 'reading events failed; retrying' }, current()?.id)
                .catch(() => undefined);
            },
            config.MCP_SUBSCRIPTIONS_PER_SESSION,
          );
          const server = createToolServer(ctx, app.log, { subscriptions });
          return { server, subscriptions };
        });
        await opened.server.connect(opened.transport);
        const webRequest = webRequestOf(request, 'POST');
        return sendWebResponse(reply, await opened.transport.handleRequest(webRequest, { parsedBody: request.body, authInfo }));
      }
      // Only what needs the session takes it (and its 404); any other request is served as a stateless one, whichever
      // instance it reached and whether or not its session still exists there.
      if (hasSession && typeof method === 'string' && SESSION_METHODS.has(method)) {
        const session = sessionOf(request, reply);
        if (!session) return reply;
        const webRequest = webRequestOf(request, 'POST');
        return sendWebResponse(reply, await session.transport.handleRequest(webRequest, { parsedBody: request.body, authInfo }));
      }
      const { forwarded, url } = forwardedOf(request);
      const eventStream = prefersEventStream(request.headers.accept);
      const server = pool.acquire();
      // Released when the response is over (or the client went away), never while a stream is open.
      reply.raw.once('close', () => void pool.release(server));

      const call = directCall(request.headers, request.body, eventStream);
      if (call) {
        const transport = new SingleResponseTransport();
        await server.connect(transport);
        transport.onmessage?.(call, { authInfo, requestInfo: { headers: forwarded, url } });
        // As the SDK's transport answers in JSON mode: 200, application/json, the response as the body.
        return reply
          .code(200)
          .header('content-type', 'application/json')
          .send(Buffer.from(JSON.stringify(await transport.response)));
      }

      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !eventStream });
      await server.connect(transport);
      const webRequest = new Request(url, { method: 'POST', headers: forwarded });
      const response = await transport.handleRequest(webRequest, { parsedBody: request.body, authInfo });
      return sendWebResponse(reply, response);
    });

    // A session's stream (its notifications) and its end; without a session there is neither.
    const sessionRequest = async (request: FastifyRequest, reply: FastifyReply) => {
      if (request.headers['mcp-session-id'] === undefined) {
        reply.header('allow', 'POST');
        return reply.code(405).send({
          detail: {
            error: 'method_not_allowed',
            message: 'GET and DELETE /mcp need a session: send initialize with POST and pass its Mcp-Session-Id header.',
          },
        });
      }
      const session = sessionOf(request, reply);
      if (!session) return reply;
      const webRequest = webRequestOf(request, request.method);
      const response = await session.transport.handleRequest(webRequest, { authInfo: authInfoOf(request) });
      if (request.method === 'GET' && response.status === 200) {
        session.streams++;
        reply.raw.once('close', () => {
          session.streams--;
          session.lastSeen = Date.now();
        });
      }
      return sendWebResponse(reply, response);
    };
    app.get(MCP_PATH, { schema: { hide: true } }, sessionRequest);
    app.delete(MCP_PATH, { schema: { hide: true } }, sessionRequest);
  };
