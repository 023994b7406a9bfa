import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IdempotencyScope } from '../db/idempotency.js';
import type { Caller, Principal } from '../domain/access/principal.js';
import type { KeyAuthenticator } from '../domain/keys/authenticator.js';
import { normalizeOrgId } from '../domain/shared/ids.js';
import { AppError } from '../errors.js';
import type { AuthThrottle } from './auth-throttle.js';
import type { ClientAddresses } from './client-address.js';
import type { ConnectionIntake } from './connection-intake.js';
import { enforceRateLimit, type RateDecision, type RateLimiter } from './rate-limit.js';

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

/** What the key check needs: the keys, the per-key rate limit, failed-authentication throttling and who the client is. */
export interface KeyGate {
  keys: KeyAuthenticator;
  rateLimiter: RateLimiter;
  /**
   * Failed authentications per (client address, key id part): valid keys never take from it, and a flood of made-up keys from
   * one address gets 429s without lookups while that address's real keys are still looked up (see AuthThrottle).
   */
  authFailures: AuthThrottle;
  /** The client address of a request: the socket's peer, or what TRUST_PROXY / the PROXY protocol say it is. */
  addresses: ClientAddresses;
  /** The connection cap per address: a connection that carries an authenticated request leaves it. */
  intake?: ConnectionIntake;
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

function refuse(policy: KeyPolicy, reply: FastifyReply, decision: RateDecision): never {
  if (!decision.allowed) {
    reply.header('retry-after', decision.retryAfterSeconds);
    throw new AppError('rate_limited', `Too many failed authentications from this address; retry after ${decision.retryAfterSeconds} s.`);
  }
  throw new AppError('unauthenticated', policy.unauthenticated);
}

/**
 * Charges a failed authentication to the throttle: an id part remembered as naming nothing (no lookup this time) to the
 * address's lookups, anything else to (address, id part); a lookup of an unread id part was charged before it ran.
 */
function failure(gate: KeyGate, address: string, token: string | undefined, lookedUp: boolean): RateDecision {
  const prefix = gate.keys.idOf(token);
  if (!lookedUp && prefix !== undefined && !gate.keys.knowsKeyIdOf(token)) return gate.authFailures.madeUp(address);
  return gate.authFailures.failed(address, prefix);
}

/**
 * onRequest hook: only a valid key within its rate limit is served, anything else is refused (401 / 429) before the body is read.
 * Callback style and synchronous while the key is cached: an async hook would cost every request a promise and a later turn.
 */
export function requireKey(gate: KeyGate, policy: KeyPolicy) {
  const { keys, rateLimiter: limiter } = gate;
  const admit = (request: FastifyRequest, reply: FastifyReply, principal: Principal | null, lookedUp: boolean, refusal?: RateDecision): void => {
    const token = bearerToken(request.headers.authorization);
    if (refusal) refuse(policy, reply, refusal);
    if (!principal || principal.kind === 'operator' || !policy.accepts.has(principal.kind)) {
      refuse(policy, reply, failure(gate, gate.addresses.of(request.raw), token, lookedUp));
    }
    gate.intake?.authenticated(request.raw.socket);
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
  const settle = (
    request: FastifyRequest,
    reply: FastifyReply,
    principal: Principal | null,
    done: (err?: Error) => void,
    lookedUp: boolean,
    refusal?: RateDecision,
  ): void => {
    try {
      admit(request, reply, principal, lookedUp, refusal);
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
      settle(request, reply, cached, done, false);
      return;
    }
    // A key id not read before, from an address that has spent its lookups, is looked up only if such a key is stored.
    gate.authFailures.lookupRefusal(gate.addresses.of(request.raw), keys.idOf(token)!, keys.knowsKeyIdOf(token)).then((refusal) => {
      if (refusal) settle(request, reply, null, done, false, refusal);
      else keys.authenticate(token).then((principal) => settle(request, reply, principal, done, true), done);
    }, done);
  };
}

export function callerOf(request: FastifyRequest): Caller {
  if (!request.principal) throw new AppError('unauthenticated', 'A valid API key is required.');
  return { principal: request.principal, requestId: request.id };
}
