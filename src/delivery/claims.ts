import { sql } from 'kysely';
import type { Tx } from '../db/connect.js';
import type { WebhookDeliveryTable } from '../db/types.js';
import { aliveSince } from './liveness.js';

type ClaimedRow = Pick<WebhookDeliveryTable, 'id' | 'subscription_id' | 'org_id' | 'event_id' | 'event_type' | 'attempt_count' | 'payload'>;

export type ClaimedDelivery = Omit<ClaimedRow, 'payload'> & {
  /** The signed body; null when the event row is gone (retention), which fails the delivery. */
  body: string | null;
};

/**
 * Leases up to `limit` due deliveries of one subscription to this worker until `leaseMs` from now.
 * On PostgreSQL the candidate rows are locked with SKIP LOCKED, so concurrent workers claim disjoint
 * sets without waiting on each other. A row stays with its worker until its lease expires or the
 * worker stops beating (see liveness.ts), whichever comes first: a live worker's claim is never
 * taken while its request runs, a dead one's is taken over within seconds. SQLite has one writer at a time.
 * Bodies are attached afterwards by `attachBodies`, once for every claim of a round.
 */
export async function claimDueDeliveries(tx: Tx, subscriptionId: string, limit: number, workerId: string, leaseMs: number): Promise<ClaimedRow[]> {
  const nowMs = Date.now();
  const now = new Date(nowMs).toISOString();
  const until = new Date(nowMs + leaseMs).toISOString();
  return tx.db
    .updateTable('webhook_deliveries')
    .set({ claimed_until: until, claimed_by: workerId })
    .where('id', 'in', (eb) => {
      const candidates = eb
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('subscription_id', '=', subscriptionId)
        // A literal, not a parameter: SQLite uses the partial index (status = 'pending') only then.
        .where('status', '=', sql.lit('pending'))
        .where('next_attempt_at', '<=', now)
        .where((w) =>
          w.or([
            w('claimed_until', 'is', null),
            w('claimed_until', '<=', now),
            // Claimed by a worker that is no longer alive (crashed, restarted): taken over at once.
            w('claimed_by', 'not in', (q) => q.selectFrom('delivery_workers').select('worker_id').where('heartbeat_at', '>=', aliveSince(nowMs))),
          ]),
        )
        .orderBy('next_attempt_at')
        .limit(limit);
      return tx.skipLocked(candidates);
    })
    .returning(['id', 'subscription_id', 'org_id', 'event_id', 'event_type', 'attempt_count', 'payload'])
    .execute();
}

const BODY_QUERY_CHUNK = 500;

/** Reads the envelopes (the event rows' payload) of claimed deliveries, in as few queries as possible. */
export async function attachBodies(tx: Tx, claimed: ClaimedRow[][]): Promise<ClaimedDelivery[][]> {
  const needed = claimed.flat().filter((d) => d.payload === null && d.org_id !== null);
  const bodies = new Map<string, string>();
  const orgOf = new Map(needed.map((d) => [d.event_id, d.org_id]));
  const ids = [...orgOf.keys()];
  for (let i = 0; i < ids.length; i += BODY_QUERY_CHUNK) {
    // Looked up by primary key alone: with an `org_id in (...)` condition SQLite prefers the
    // (org_id, stream_offset) index and walks every event of those orgs. The org is checked below.
    const rows = await tx.db
      .selectFrom('events')
      .select(['id', 'org_id', 'payload'])
      .where('id', 'in', ids.slice(i, i + BODY_QUERY_CHUNK))
      .execute();
    for (const row of rows) if (orgOf.get(row.id) === row.org_id) bodies.set(row.id, row.payload);
  }
  return claimed.map((rows) => rows.map(({ payload, ...d }) => ({ ...d, body: payload ?? bodies.get(d.event_id) ?? null })));
}
