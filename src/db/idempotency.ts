import type { Kysely } from 'kysely';
import type { Database, IdempotencyKeyTable } from './types.js';

/** How long a stored answer is kept (extensions §2: at least 24 h). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** The answer a write gives, as it will be replayed. */
export interface StoredAnswer {
  status: number;
  body: unknown;
  location?: string;
}

/**
 * The request's Idempotency-Key, handed by the service to its units of work. The first unit whose value `answer`
 * turns into an answer stores it in its own transaction; null means nothing worth replaying (the key stays free).
 */
export interface IdempotencyScope {
  apiKeyId: string;
  key: string;
  fingerprint: string;
  answer(value: unknown): StoredAnswer | null;
  /** Set once a unit has committed the answer. */
  stored: boolean;
}

/** The scope a unit of work may still store its answer in: none once an earlier unit of the request has. */
export function openScope(scope: IdempotencyScope | undefined): IdempotencyScope | undefined {
  return scope && !scope.stored ? scope : undefined;
}

/** The row a unit writes for its request's key, given the unit's value; null when there is nothing to store. */
export function idempotencyRow(scope: IdempotencyScope | undefined, value: unknown): IdempotencyKeyTable | null {
  if (!scope) return null;
  const answer = scope.answer(value);
  if (!answer) return null;
  const now = Date.now();
  return {
    api_key_id: scope.apiKeyId,
    idem_key: scope.key,
    fingerprint: scope.fingerprint,
    status: answer.status,
    body: JSON.stringify(answer.body),
    location: answer.location ?? null,
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + IDEMPOTENCY_TTL_MS).toISOString(),
  };
}

/** Another request committed the key's answer first: this unit was rolled back whole and the stored answer is replayed. */
export class IdempotencyKeyTaken extends Error {
  constructor(
    readonly apiKeyId: string,
    readonly key: string,
  ) {
    super('The Idempotency-Key was used by a request that committed first.');
  }
}

/** A unique violation of the idempotency_keys primary key, on either dialect. */
export function isIdempotencyKeyConflict(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string; message?: string };
  if (e?.code === '23505') return e.constraint === 'idempotency_keys_pkey';
  return (e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE') && /idempotency_keys\./.test(e.message ?? '');
}

/** Deletes expired answers; returns how many. */
export async function sweepExpiredAnswers(db: Kysely<Database>): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', new Date().toISOString()).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0);
}
