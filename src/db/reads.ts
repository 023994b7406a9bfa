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

export interface StoredEvent {
  offset: number;
  payload: string;
  createdAtMs: number;
}

const eventsAfterQuery = preparedQuery((db, p) =>
  db
    .selectFrom('events')
    .select(['stream_offset', 'payload', 'created_at'])
    .where('org_id', '=', p('orgId'))
    .where('stream_offset', '>', p('after'))
    .orderBy('stream_offset')
    .limit(p('limit')),
);

/** Committed events of one org after `after`, in offset order; an org's offsets commit in increasing order, so none is skipped. */
export async function eventsAfter(handle: DbHandle, orgId: string, after: number, limit: number): Promise<StoredEvent[]> {
  const rows = await eventsAfterQuery.execute(handle, { orgId, after, limit });
  return rows.map((r) => ({ offset: Number(r.stream_offset), payload: r.payload, createdAtMs: Date.parse(r.created_at) }));
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
