import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { DbHandle } from '../db/connect.js';
import type { StoredAnswer } from '../db/idempotency.js';
import { storedAnswer } from '../db/reads.js';
import type { IdempotencyKeyTable } from '../db/types.js';
import type { WriteOptions } from '../db/unit-of-work.js';
import { AppError, fieldError } from '../errors.js';
import { appendRouteHook } from './route-hooks.js';

/**
 * Idempotency-Key on REST writes (extensions §2): the answer is stored in the write's own transaction, so a retry replays it and
 * another request under the key is refused. A key whose first request still runs here is a 409; answers that wrote nothing are not stored.
 */

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const KEY_PATTERN = /^[\x20-\x7E]{1,255}$/;
const KEY_RULE = '1 to 255 printable ASCII characters';

/** The header as the OpenAPI document shows it on every POST and PATCH. */
export const idempotencyHeaders = z.looseObject({
  [IDEMPOTENCY_HEADER]: z
    .string()
    .regex(KEY_PATTERN, `must be ${KEY_RULE}`)
    .optional()
    .describe(
      `A key of yours (${KEY_RULE}, e.g. a UUID) that makes this write safe to retry for 24 h: a retry with the same key and ` +
        'the same request replays the stored answer with `Idempotent-Replayed: true` and writes nothing; the same key with ' +
        'another request is a 422 idempotency_key_reused; while the first request runs, a 409 idempotency_key_in_use.',
    ),
});

/** A route's stored answer for its unit of work's value (and the body, when the answer's shape follows it); null when nothing was written. */
export type AnswerOf = (value: unknown, body?: unknown) => StoredAnswer | null;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on routes that accept Idempotency-Key: how their unit of work's value becomes the stored answer. */
    idempotentAnswer?: AnswerOf;
  }
}

/** JSON with object keys sorted at every level, so equal bodies hash alike whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** What makes two requests "the same request": method, path and the SHA-256 of the canonical JSON body. */
export function requestFingerprint(method: string, url: string, body: unknown): string {
  const path = url.split('?')[0];
  const bodyHash = createHash('sha256')
    .update(canonicalJson(body ?? null))
    .digest('hex');
  return createHash('sha256').update(`${method} ${path} ${bodyHash}`).digest('hex');
}

/** The write options of a REST write: its Idempotency-Key's scope, when it carries one. */
export function writeOptionsOf(request: FastifyRequest): WriteOptions {
  return request.idempotency ? { idempotency: request.idempotency } : {};
}

/** Sends a stored answer again, or refuses when the key was stored for another request. */
export function replayStoredAnswer(reply: FastifyReply, stored: IdempotencyKeyTable, fingerprint: string): FastifyReply {
  if (stored.fingerprint !== fingerprint) {
    throw new AppError(
      'idempotency_key_reused',
      'This Idempotency-Key was already used for another request (method, path or body differ); use a new key for a new request.',
    );
  }
  reply.code(stored.status).header('idempotent-replayed', 'true').type('application/json; charset=utf-8');
  if (stored.location) reply.header('location', stored.location);
  return reply.send(stored.body as never);
}

/**
 * Gives each route registered from now on that accepts Idempotency-Key the preHandler below, at registration, so a request never
 * reads `request.routeOptions` (rebuilt on each access) and routes without the header pay nothing.
 */
export function idempotentRoutes(instance: FastifyInstance, db: DbHandle): void {
  // Keys whose first request is running in this process. Across instances, the stored answer's
  // primary key decides: the later commit fails whole and replays the first one's answer.
  const inFlight = new Set<string>();
  instance.addHook('onRoute', (route) => {
    const answerOf = route.config?.idempotentAnswer;
    if (!answerOf) return;
    appendRouteHook(route, 'preHandler', idempotencyHook(db, inFlight, answerOf));
  });
}

/** preHandler after authentication and validation, so a refused request never touches the key; callback style, a no-op without the header. */
function idempotencyHook(db: DbHandle, inFlight: Set<string>, answerOf: AnswerOf) {
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    const key = request.headers[IDEMPOTENCY_HEADER];
    if (key === undefined) {
      done();
      return;
    }
    if (typeof key !== 'string' || !KEY_PATTERN.test(key)) {
      done(fieldError(['header', IDEMPOTENCY_HEADER], `must be ${KEY_RULE}`, 'value_error'));
      return;
    }
    const principal = request.principal;
    if (!principal || principal.kind === 'operator') {
      done();
      return;
    }
    const slot = `${principal.keyId}\n${key}`;
    if (inFlight.has(slot)) {
      reply.header('retry-after', 1);
      done(new AppError('idempotency_key_in_use', 'A request with this Idempotency-Key is still running; retry after it has answered.'));
      return;
    }
    inFlight.add(slot);
    reply.raw.once('close', () => inFlight.delete(slot));
    const fingerprint = requestFingerprint(request.method, request.url, request.body);
    storedAnswer(db, principal.keyId, key).then(
      (stored) => {
        if (stored) {
          try {
            replayStoredAnswer(reply, stored, fingerprint);
          } catch (err) {
            done(err as Error);
          }
          return;
        }
        request.idempotency = { apiKeyId: principal.keyId, key, fingerprint, answer: (value) => answerOf(value, request.body), stored: false };
        done();
      },
      (err: Error) => done(err),
    );
  };
}

/** The stored answer that beat this request's commit, sent in its place (see IdempotencyKeyTaken). */
export async function replayTakenKey(db: DbHandle, request: FastifyRequest, reply: FastifyReply, apiKeyId: string, key: string) {
  const stored = await storedAnswer(db, apiKeyId, key);
  if (!stored) throw new AppError('idempotency_key_in_use', 'A request with this Idempotency-Key is being written; retry in a moment.');
  return replayStoredAnswer(reply, stored, requestFingerprint(request.method, request.url, request.body));
}
