import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IdempotencyScope } from '../db/idempotency.js';
import type { Caller, Principal } from '../domain/access/principal.js';
import type { KeyAuthenticator } from '../domain/keys/authenticator.js';
import { normalizeOrgId } from '../domain/shared/ids.js';
import { AppError } from '../errors.js';
import { enforceRateLimit, type RateLimiter } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    /** Set by the Idempotency-Key hook on REST writes that carry the header. */
    idempotency: IdempotencyScope | null;
  }
}

export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** What the key check needs: the keys, the per-key rate limit, and the per-address limit on failed authentication. */
export interface KeyGate {
  keys: KeyAuthenticator;
  rateLimiter: RateLimiter;
  /**
   * Failed authentications per client address (valid keys never take from it). An address out of tokens gets 429s and its
   * unknown key ids are not looked up, so a flood of made-up keys costs the database nothing.
   */
  authFailures: RateLimiter;
}

/** Which keys a surface takes, and what its 401 says. */
export interface KeyPolicy {
  accepts: ReadonlySet<Principal['kind']>;
  unauthenticated: string;
}

/** The public REST API: API keys, and admin keys for the orgs beneath their subject. */
export const PUBLIC_API_KEYS: KeyPolicy = {
  accepts: new Set(['api_key', 'admin_key']),
  unauthenticated: 'A valid API key is required: Authorization: Bearer enk_live_...',
};
/** The tool server: API keys only (agents use narrowly scoped keys, never admin keys). */
export const TOOL_SERVER_KEYS: KeyPolicy = {
  accepts: new Set(['api_key']),
  unauthenticated: 'A valid API key is required: Authorization: Bearer enk_live_...',
};
export const ADMIN_KEYS: KeyPolicy = { accepts: new Set(['admin_key']), unauthenticated: 'A valid admin key is required: Authorization: Bearer enk_adm_...' };

function refuse(gate: KeyGate, policy: KeyPolicy, request: FastifyRequest, reply: FastifyReply): never {
  const decision = gate.authFailures.take(request.ip);
  if (!decision.allowed) {
    reply.header('retry-after', decision.retryAfterSeconds);
    throw new AppError('rate_limited', `Too many failed authentications from this address; retry after ${decision.retryAfterSeconds} s.`);
  }
  throw new AppError('unauthenticated', policy.unauthenticated);
}

/**
 * onRequest hook: only a valid key within its rate limit is served, anything else is refused (401 / 429) before the body is read.
 * Callback style and synchronous while the key is cached: an async hook would cost every request a promise and a later turn.
 */
export function requireKey(gate: KeyGate, policy: KeyPolicy) {
  const { keys, rateLimiter: limiter } = gate;
  const admit = (request: FastifyRequest, reply: FastifyReply, principal: Principal | null): void => {
    if (!principal || principal.kind === 'operator' || !policy.accepts.has(principal.kind)) refuse(gate, policy, request, reply);
    enforceRateLimit(limiter, principal.keyId, reply);
    request.principal = principal;
    // Org ids name the same org in any letter case: normalised once, here, before any service sees them.
    const params = request.params as { org_id?: unknown } | undefined;
    if (typeof params?.org_id === 'string') params.org_id = normalizeOrgId(params.org_id);
    // Later log lines of this request (including "request completed") name the key id and org, never the key itself.
    const orgId = params?.org_id;
    const child = request.log.child(typeof orgId === 'string' ? { keyId: principal.keyId, orgId } : { keyId: principal.keyId });
    request.log = child;
    reply.log = child;
  };
  const settle = (request: FastifyRequest, reply: FastifyReply, principal: Principal | null, done: (err?: Error) => void): void => {
    try {
      admit(request, reply, principal);
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  };
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    const token = bearerToken(request.headers.authorization);
    const cached = keys.authenticateCached(token);
    if (cached !== undefined) {
      settle(request, reply, cached, done);
      return;
    }
    // A key id never seen before, from an address that has used up its failures: refused unread.
    if (!keys.knowsKeyIdOf(token) && !gate.authFailures.wouldAllow(request.ip)) {
      settle(request, reply, null, done);
      return;
    }
    keys.authenticate(token).then((principal) => settle(request, reply, principal, done), done);
  };
}

export function callerOf(request: FastifyRequest): Caller {
  if (!request.principal) throw new AppError('unauthenticated', 'A valid API key is required.');
  return { principal: request.principal, requestId: request.id };
}
