import type { DbHandle } from './handle.js';
import { preparedQuery } from './prepared.js';
import type { IdempotencyKeyTable } from './types.js';

// The hot paths' reads, as prepared queries (see preparedQuery).

const recordById = preparedQuery((db, p) => db.selectFrom('emergencies').select('record').where('org_id', '=', p('org_id')).where('id', '=', p('id')));

/** The emergency's stored record (JSON text, as the API returns it), or undefined when the org has no such emergency. */
export async function emergencyRecordById(handle: DbHandle, orgId: string, id: string): Promise<string | undefined> {
  const [row] = await recordById.execute(handle, { org_id: orgId, id });
  return row?.record ?? undefined;
}

const answerByKey = preparedQuery((db, p) =>
  db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('api_key_id', '=', p('api_key_id'))
    .where('idem_key', '=', p('idem_key'))
    .where('expires_at', '>', p('now')),
);

/** The stored answer of an Idempotency-Key, unless expired (read on every write that carries one). */
export async function storedAnswer(handle: DbHandle, apiKeyId: string, key: string): Promise<IdempotencyKeyTable | undefined> {
  const [row] = await answerByKey.execute(handle, { api_key_id: apiKeyId, idem_key: key, now: new Date().toISOString() });
  return row;
}
