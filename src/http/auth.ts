import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller, Principal } from '../domain/access/principal.js';
import type { KeyAuthenticator } from '../domain/keys/service.js';
import { AppError } from '../errors.js';
import { enforceRateLimit, type RateLimiter } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/**
 * onRequest hook: a route is served only to a valid key within its rate limit; everything else is
 * refused (401 / 429) before the body is read. Callback style, and synchronous while the key is
 * cached: an async hook would cost every request a promise and a later turn.
 */
export function requireApiKey(keys: KeyAuthenticator, limiter: RateLimiter) {
  const admit = (request: FastifyRequest, reply: FastifyReply, principal: Principal | null): void => {
    if (!principal || principal.kind !== 'api_key') {
      throw new AppError('unauthenticated', 'A valid API key is required: Authorization: Bearer enk_live_...');
    }
    enforceRateLimit(limiter, principal.keyId, reply);
    request.principal = principal;
    // Every later log line of this request (including "request completed") names the key and org;
    // never the key itself.
    const orgId = (request.params as { org_id?: unknown } | undefined)?.org_id;
    const child = request.log.child({ keyId: principal.keyId, ...(typeof orgId === 'string' ? { orgId } : {}) });
    request.log = child;
    reply.log = child;
  };
  const settle = (request: FastifyRequest, reply: FastifyReply, principal: Principal | null, done: (err?: Error) => void): void => {
    try {
      admit(request, reply, principal);
    } catch (err) {
      return done(err as Error);
    }
    done();
  };
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    const token = bearerToken(request.headers.authorization);
    const cached = keys.authenticateCached(token);
    if (cached !== undefined) return settle(request, reply, cached, done);
    keys.authenticate(token).then((principal) => settle(request, reply, principal, done), done);
  };
}

export function callerOf(request: FastifyRequest): Caller {
  if (!request.principal) throw new AppError('unauthenticated', 'A valid API key is required.');
  return { principal: request.principal, requestId: request.id };
}
