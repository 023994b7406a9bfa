import type { Kysely } from 'kysely';
import type { Tx } from '../../db/connect.js';
import { inlineConstant } from '../../db/inline-constant.js';
import type { Database, WebhookAttemptTable, WebhookDeliveryTable, WebhookSubscriptionTable } from '../../db/types.js';
import { eventsWithIds } from '../../log/reads.js';

/**
 * Every statement on the webhook queue (deliveries, attempts, live workers), and the reads of
 * subscriptions the dispatcher makes. The dispatcher and the webhooks service reach these tables only
 * through here, so this file shows every way the queue is read and written. The fan-out's cursors over
 * the event stream and the events themselves belong to the event log (src/log/).
 */

type Db = Kysely<Database>;

/** Delivery rows and the attempt log are written in chunks, to stay within the drivers' parameter limits. */
const INSERT_CHUNK = 200;
const ID_LIST_CHUNK = 500;

// ---- Deliveries ----

/** A delivery of `event` to one subscription, due now: what fan-out and replay both queue. */
export function pendingDelivery(
  id: string,
  subscriptionId: string,
  orgId: string,
  event: { id: string; event_type: string },
  now: string,
): WebhookDeliveryTable {
  return {
    id,
    subscription_id: subscriptionId,
    org_id: orgId,
    event_id: event.id,
    event_type: event.event_type,
    payload: null,
    status: 'pending',
    attempt_count: 0,
    next_attempt_at: now,
    claimed_until: null,
    claimed_by: null,
    last_response_code: null,
    last_error: null,
    created_at: now,
    updated_at: now,
    completed_at: null,
  };
}

/** Inserts fanned-out deliveries and returns the ids actually written. */
export async function insertNewDeliveries(tx: Tx, rows: WebhookDeliveryTable[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    // The unique (subscription, event) pair makes a repeated fan-out harmless.
    const written = await tx.db
      .insertInto('webhook_deliveries')
      .values(rows.slice(i, i + INSERT_CHUNK))
      .onConflict((oc) => oc.columns(['subscription_id', 'event_id']).doNothing())
      .returning('id')
      .execute();
    for (const { id } of written) inserted.add(id);
  }
  return inserted;
}

/** Queues a delivery for immediate delivery, or resets the existing one of the same (subscription, event) pair. */
export async function requeueDelivery(tx: Tx, row: WebhookDeliveryTable, now: string): Promise<void> {
  await tx.db
    .insertInto('webhook_deliveries')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['subscription_id', 'event_id']).doUpdateSet({
        status: 'pending',
        attempt_count: 0,
        next_attempt_at: now,
        claimed_until: null,
        claimed_by: null,
        updated_at: now,
        completed_at: null,
      }),
    )
    .execute();
}

type ClaimedRow = Pick<WebhookDeliveryTable, 'id' | 'subscription_id' | 'org_id' | 'event_id' | 'event_type' | 'attempt_count' | 'payload'>;

export type ClaimedDelivery = Omit<ClaimedRow, 'payload'> & {
  /** The signed body; null when the event row is gone (retention), which fails the delivery. */
  body: string | null;
};

/** The terms of one claim: who takes the rows, until when, and whose claims count as abandoned. */
export interface LeaseTerms {
  workerId: string;
  now: string;
  until: string;
  /** The oldest heartbeat of a live worker (see liveness.ts). */
  aliveSince: string;
}

/**
 * Leases up to `limit` due deliveries of one subscription. On PostgreSQL the candidate rows are locked
 * with SKIP LOCKED, so concurrent workers claim disjoint sets without waiting on each other; SQLite has
 * one writer at a time. A row stays with its worker until its lease expires or the worker stops beating,
 * whichever comes first. Bodies are attached afterwards by `attachBodies`, once for every claim of a round.
 */
export async function claimDueDeliveries(tx: Tx, subscriptionId: string, limit: number, lease: LeaseTerms): Promise<ClaimedRow[]> {
  return tx.db
    .updateTable('webhook_deliveries')
    .set({ claimed_until: lease.until, claimed_by: lease.workerId })
    .where('id', 'in', (eb) => {
      const candidates = eb
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('subscription_id', '=', subscriptionId)
        // A literal, not a parameter: SQLite uses the partial index (status = 'pending') only then.
        .where('status', '=', inlineConstant('pending'))
        .where('next_attempt_at', '<=', lease.now)
        .where((w) =>
          w.or([
            w('claimed_until', 'is', null),
            w('claimed_until', '<=', lease.now),
            // Claimed by a worker that is no longer alive (crashed, restarted): taken over at once.
            w('claimed_by', 'not in', (q) => q.selectFrom('delivery_workers').select('worker_id').where('heartbeat_at', '>=', lease.aliveSince)),
          ]),
        )
        .orderBy('next_attempt_at')
        .limit(limit);
      return tx.skipLocked(candidates);
    })
    .returning(['id', 'subscription_id', 'org_id', 'event_id', 'event_type', 'attempt_count', 'payload'])
    .execute();
}

/** Reads the envelopes (the event rows' payload) of claimed deliveries, in as few queries as possible. */
export async function attachBodies(tx: Tx, claimed: ClaimedRow[][]): Promise<ClaimedDelivery[][]> {
  const needed = claimed.flat().filter((d) => d.payload === null && d.org_id !== null);
  const orgOf = new Map(needed.map((d) => [d.event_id, d.org_id]));
  const bodies = new Map<string, string>();
  // Read by id alone: a delivery's body is its own org's event, checked here.
  for (const row of await eventsWithIds(tx.db, [...orgOf.keys()], ['id', 'org_id', 'payload'])) {
    if (orgOf.get(row.id) === row.org_id) bodies.set(row.id, row.payload);
  }
  return claimed.map((rows) => rows.map(({ payload, ...d }) => ({ ...d, body: payload ?? bodies.get(d.event_id) ?? null })));
}

/** Hands claims back at once instead of after their lease; a chunk that fails is reported and keeps its lease. */
export async function releaseClaims(db: Db, ids: string[], workerId: string, onFailure: (err: unknown) => void): Promise<void> {
  for (let i = 0; i < ids.length; i += ID_LIST_CHUNK) {
    await db
      .updateTable('webhook_deliveries')
      .set({ claimed_until: null, claimed_by: null })
      .where('id', 'in', ids.slice(i, i + ID_LIST_CHUNK))
      .where('claimed_by', '=', workerId)
      .execute()
      .catch(onFailure);
  }
}

// ---- Outcomes ----
// Every update is guarded by `claimed_by`, so a worker whose lease was taken over cannot overwrite the new owner's state.

export async function markDelivered(tx: Tx, ids: string[], responseCode: number, workerId: string, now: string): Promise<void> {
  await tx.db
    .updateTable('webhook_deliveries')
    .set({
      status: 'delivered',
      attempt_count: (eb) => eb('attempt_count', '+', 1),
      claimed_until: null,
      claimed_by: null,
      last_response_code: responseCode,
      last_error: null,
      updated_at: now,
      completed_at: now,
    })
    .where('id', 'in', ids)
    .where('claimed_by', '=', workerId)
    .execute();
}

/** An attempt cut short by a stopping worker: due again at once, its attempt count unchanged. */
export async function returnInterrupted(tx: Tx, deliveryId: string, workerId: string, now: string): Promise<void> {
  await tx.db
    .updateTable('webhook_deliveries')
    .set({ claimed_until: null, claimed_by: null, next_attempt_at: now, updated_at: now })
    .where('id', '=', deliveryId)
    .where('claimed_by', '=', workerId)
    .execute();
}

/** A failed attempt: retried at `retryAt`, or failed for good when it is null. */
export async function recordFailure(
  tx: Tx,
  deliveryId: string,
  workerId: string,
  failure: { attemptCount: number; responseCode: number | null; error: string | null; now: string; retryAt: string | null },
): Promise<void> {
  const base = {
    attempt_count: failure.attemptCount,
    claimed_until: null,
    claimed_by: null,
    last_response_code: failure.responseCode,
    last_error: failure.error,
    updated_at: failure.now,
  };
  await tx.db
    .updateTable('webhook_deliveries')
    .set(failure.retryAt === null ? { ...base, status: 'failed', completed_at: failure.now } : { ...base, next_attempt_at: failure.retryAt })
    .where('id', '=', deliveryId)
    .where('claimed_by', '=', workerId)
    .execute();
}

export async function insertAttempts(tx: Tx, rows: WebhookAttemptTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    await tx.db
      .insertInto('webhook_attempts')
      .values(rows.slice(i, i + INSERT_CHUNK))
      .execute();
  }
}

/** A delivery made and settled outside the queue (a test ping), logged with its one attempt. */
export async function insertSettledDelivery(tx: Tx, delivery: WebhookDeliveryTable, attempt: WebhookAttemptTable): Promise<void> {
  await tx.db.insertInto('webhook_deliveries').values(delivery).execute();
  await tx.db.insertInto('webhook_attempts').values(attempt).execute();
}

// ---- Subscriptions as the dispatcher sees them ----

/** Active subscriptions: all of them, or those of `ids`. */
export async function activeSubscriptions(tx: Tx, ids?: string[]): Promise<WebhookSubscriptionTable[]> {
  const query = tx.db.selectFrom('webhook_subscriptions').selectAll().where('status', '=', 'active');
  return ids === undefined ? query.execute() : query.where('id', 'in', ids).execute();
}

/** Starts a subscription's run of failures at `since` unless one runs already, and returns its state. */
export async function markFailing(tx: Tx, subscriptionId: string, since: string) {
  await tx.db.updateTable('webhook_subscriptions').set({ failing_since: since }).where('id', '=', subscriptionId).where('failing_since', 'is', null).execute();
  return tx.db.selectFrom('webhook_subscriptions').select(['failing_since', 'status']).where('id', '=', subscriptionId).executeTakeFirst();
}

/** Any success ends a subscription's run of failures. */
export async function clearFailing(tx: Tx, subscriptionIds: string[]): Promise<void> {
  await tx.db
    .updateTable('webhook_subscriptions')
    .set({ failing_since: null })
    .where('id', 'in', subscriptionIds)
    .where('failing_since', 'is not', null)
    .execute();
}

// ---- Live workers ----

/** The workers of one machine. */
export async function workersOn(db: Db, host: string) {
  return db.selectFrom('delivery_workers').select(['worker_id', 'pid']).where('host', '=', host).execute();
}

export async function removeWorkers(db: Db, workerIds: string[]): Promise<void> {
  await db.deleteFrom('delivery_workers').where('worker_id', 'in', workerIds).execute();
}

/** Adds the worker's row, or beats it when it exists. */
export async function upsertWorker(db: Db, worker: { workerId: string; host: string; pid: number }, now: string): Promise<void> {
  await db
    .insertInto('delivery_workers')
    .values({ worker_id: worker.workerId, host: worker.host, pid: worker.pid, started_at: now, heartbeat_at: now })
    .onConflict((oc) => oc.column('worker_id').doUpdateSet({ heartbeat_at: now }))
    .execute();
}

export async function removeWorkersSilentSince(db: Db, before: string): Promise<void> {
  await db.deleteFrom('delivery_workers').where('heartbeat_at', '<', before).execute();
}

export async function beat(db: Db, workerId: string, now: string): Promise<void> {
  await db.updateTable('delivery_workers').set({ heartbeat_at: now }).where('worker_id', '=', workerId).execute();
}

export async function removeWorker(db: Db, workerId: string): Promise<void> {
  await db.deleteFrom('delivery_workers').where('worker_id', '=', workerId).execute();
}

// ---- Views of one subscription's queue (the operator's commands) ----

/** Deliveries of a subscription by status. */
export async function deliveryCounts(db: Db, subscriptionId: string) {
  return db
    .selectFrom('webhook_deliveries')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('subscription_id', '=', subscriptionId)
    .groupBy('status')
    .execute();
}

/** A subscription's latest attempts, newest first. */
export async function recentAttempts(db: Db, subscriptionId: string, limit: number) {
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** One page of a subscription's deliveries, newest first, from before `before` ([created_at, id]) on; one row more than `limit` tells that more follow. */
export async function deliveriesPage(db: Db, subscriptionId: string, before: [string, string] | null, limit: number) {
  let query = db
    .selectFrom('webhook_deliveries')
    .select(['id', 'event_id', 'event_type', 'org_id', 'status', 'created_at'])
    .where('subscription_id', '=', subscriptionId);
  if (before) {
    const [createdAt, deliveryId] = before;
    query = query.where((eb) => eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', deliveryId)])]));
  }
  return query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}

/** The latest `perDelivery` attempts of each delivery, oldest first. */
export async function latestAttempts(db: Db, deliveryIds: string[], perDelivery: number) {
  if (deliveryIds.length === 0) return [];
  return db
    .selectFrom((eb) =>
      eb
        .selectFrom('webhook_attempts')
        .select(['delivery_id', 'started_at', 'response_code', 'duration_ms', 'error'])
        .select((w) =>
          w.fn
            .agg<number>('row_number')
            .over((over) => over.partitionBy('delivery_id').orderBy('started_at', 'desc'))
            .as('recency'),
        )
        .where('delivery_id', 'in', deliveryIds)
        .as('a'),
    )
    .select(['delivery_id', 'started_at', 'response_code', 'duration_ms', 'error'])
    .where('recency', '<=', perDelivery)
    .orderBy('started_at')
    .execute();
}

/** Removes a subscription's queue and delivery log. */
export async function deleteQueueOf(tx: Tx, subscriptionId: string): Promise<void> {
  await tx.db.deleteFrom('webhook_attempts').where('subscription_id', '=', subscriptionId).execute();
  await tx.db.deleteFrom('webhook_deliveries').where('subscription_id', '=', subscriptionId).execute();
}

/** Deliveries of these events in the org, counted by event and status (receipts). */
export async function deliveryStatusCounts(db: Db, orgId: string, eventIds: string[]) {
  return db
    .selectFrom('webhook_deliveries')
    .select(['event_id', 'status', (eb) => eb.fn.countAll().as('n')])
    .where('org_id', '=', orgId)
    .where('event_id', 'in', eventIds)
    .groupBy(['event_id', 'status'])
    .execute();
}
