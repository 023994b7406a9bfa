import type { AnswerOf } from '../../../edge/idempotency.js';

const SECRET_FIELDS = ['key', 'secret', 'token'];

function withoutSecrets(body: unknown): unknown {
  if (Array.isArray(body)) return body.map(withoutSecrets);
  if (body && typeof body === 'object') {
    return Object.fromEntries(
      Object.entries(body)
        .filter(([k]) => !SECRET_FIELDS.includes(k))
        .map(([k, v]) => [k, withoutSecrets(v)]),
    );
  }
  return body;
}

/**
 * The route config of an admin write: the answer it stores for an Idempotency-Key is the body the
 * route sends (built by the same `present`), minus any secret.
 */
export function storedAnswer<V>(status: number, present: (value: V, body?: unknown) => unknown): { idempotentAnswer: AnswerOf } {
  return { idempotentAnswer: (value, body) => ({ status, body: withoutSecrets(present(value as V, body)) }) };
}
