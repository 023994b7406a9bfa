import type { AppContext } from '../context.js';
import type { Tx } from '../db/connect.js';
import { findOrgScope } from '../domain/orgs/scope.js';
import type { WebhookDeliveryTable, WebhookSubscriptionTable } from '../db/types.js';
import { nowIso } from '../domain/shared/ids.js';
import { activeSubscriptionsInTree, pendingDelivery, subscriptionWants } from '../domain/webhooks/repo.js';
import type { ClaimedDelivery } from './claims.js';

const INSERT_CHUNK = 200;

/** Organizations whose committed event stream is ahead of the fan-out cursor (the polling backstop). */
export async function orgsBehind(ctx: AppContext, limit: number): Promise<string[]> {
  const rows = await ctx.db.db
    .selectFrom('orgs as o')
    .leftJoin('webhook_cursors as c', 'c.org_id', 'o.id')
    .select('o.id')
    .where((eb) => eb('o.event_offset', '>', eb.fn.coalesce('c.last_offset', eb.lit(0))))
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Locks the org's cursor row and returns its offset, or null when another worker holds it (that
 * worker is fanning out the same org right now; SKIP LOCKED keeps this one from waiting on it).
 */
async function lockCursor(tx: Tx, orgId: string): Promise<number | null> {
  const select = () => {
    const q = tx.db.selectFrom('webhook_cursors').select('last_offset').where('org_id', '=', orgId);
    return tx.skipLocked(q).executeTakeFirst();
  };
  const found = await select();
  if (found) return Number(found.last_offset);
  // Not found: either it does not exist yet, or another worker holds it (skipped).
  const exists = await tx.db.selectFrom('webhook_cursors').select('org_id').where('org_id', '=', orgId).executeTakeFirst();
  if (exists) return null;
  // An org created after the migration: its stream starts at offset 1.
  await tx.db
    .insertInto('webhook_cursors')
    .values({ org_id: orgId, last_offset: 0, updated_at: nowIso() })
    .onConflict((oc) => oc.column('org_id').doNothing())
    .execute();
  const created = await select();
  return created ? Number(created.last_offset) : null;
}

export interface FanOutResult {
  /** Subscriptions that received new deliveries left for a claim (due now). */
  subscriptionIds: Set<string>;
  /** True when the batch was full: more events may be waiting. */
  more: boolean;
  /** Deliveries created already claimed by the caller (see FanOutClaim), per subscription. */
  claimed: { subscription: WebhookSubscriptionTable; deliveries: ClaimedDelivery[] }[];
}

/**
 * Lets the worker that fans out take the new deliveries at once: they are written already leased to
 * it (claimed_by, claimed_until), with their bodies at hand, which saves the claim's update and read.
 */
export interface FanOutClaim {
  workerId: string;
  claimedUntil: string;
  /** How many new deliveries of this subscription the worker can take now (0: leave them to claims). */
  room(subscriptionId: string): number;
  /** Told how many it was given. */
  took(subscriptionId: string, count: number): void;
}

/**
 * Turns the next committed events of one org into one delivery per subscription that wants them,
 * and advances the org's cursor, in the caller's transaction: a crash leaves either both or neither.
 * Events are read by (org_id, stream_offset), the gap-free per-org order, never by a global order
 * that could commit out of sequence.
 */
export async function fanOutOrg(tx: Tx, orgId: string, batchSize: number, claim?: FanOutClaim): Promise<FanOutResult> {
  const subscriptionIds = new Set<string>();
  const claimed: FanOutResult['claimed'] = [];
  const offset = await lockCursor(tx, orgId);
  if (offset === null) return { subscriptionIds, more: false, claimed };
  // The org's committed offset is read before its subscriptions, as the events were before: an
  // event is matched against the subscriptions that existed once it had committed.
  const head = await tx.db.selectFrom('orgs').select('event_offset').where('id', '=', orgId).executeTakeFirst();
  const last = Math.min(Number(head?.event_offset ?? 0), offset + batchSize);
  if (last <= offset) return { subscriptionIds, more: false, claimed };
  const scope = await findOrgScope({ db: tx.db }, orgId);
  const subscriptions = scope ? await activeSubscriptionsInTree(tx.db, scope) : [];
  // Most orgs subscribe nothing: their cursor moves on without their events (and bodies) being read.
  const events =
    subscriptions.length === 0
      ? []
      : await tx.db
          .selectFrom('events')
          .select(['id', 'stream_offset', 'event_type', 'created_at', 'payload'])
          .where('org_id', '=', orgId)
          .where('stream_offset', '>', offset)
          .where('stream_offset', '<=', last)
          .orderBy('stream_offset')
          .execute();
  const now = nowIso();
  const rows: WebhookDeliveryTable[] = [];
  /** Rows written claimed, by id: handed to the worker only if their insert took place. */
  const taken = new Map<string, { subscription: WebhookSubscriptionTable; delivery: ClaimedDelivery }>();
  const room = new Map(subscriptions.map((sub) => [sub.id, claim ? claim.room(sub.id) : 0]));
  for (const event of events) {
    for (const sub of subscriptions) {
      if (!subscriptionWants(sub, orgId, event.event_type, event.created_at)) continue;
      const row = pendingDelivery(sub.id, orgId, event, now);
      const left = room.get(sub.id)!;
      if (claim && left > 0) {
        room.set(sub.id, left - 1);
        row.claimed_by = claim.workerId;
        row.claimed_until = claim.claimedUntil;
        const delivery = {
          id: row.id,
          subscription_id: sub.id,
          org_id: orgId,
          event_id: event.id,
          event_type: event.event_type,
          attempt_count: 0,
          body: event.payload,
        };
        taken.set(row.id, { subscription: sub, delivery });
      } else {
        subscriptionIds.add(sub.id);
      }
      rows.push(row);
    }
  }
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
  const bySubscription = new Map<string, FanOutResult['claimed'][number]>();
  for (const [id, { subscription, delivery }] of taken) {
    if (!inserted.has(id)) continue;
    let entry = bySubscription.get(subscription.id);
    if (!entry) {
      entry = { subscription, deliveries: [] };
      bySubscription.set(subscription.id, entry);
      claimed.push(entry);
    }
    entry.deliveries.push(delivery);
  }
  for (const entry of claimed) claim!.took(entry.subscription.id, entry.deliveries.length);
  await tx.db.updateTable('webhook_cursors').set({ last_offset: last, updated_at: now }).where('org_id', '=', orgId).execute();
  return { subscriptionIds, more: last === offset + batchSize, claimed };
}
