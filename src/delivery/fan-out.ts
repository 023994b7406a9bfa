import type { Kysely } from 'kysely';
import type { Tx } from '../db/connect.js';
import type { Database, WebhookDeliveryTable, WebhookSubscriptionTable } from '../db/types.js';
import { findOrgScope } from '../domain/orgs/scope.js';
import { newId, nowIso } from '../domain/shared/ids.js';
import { activeSubscriptionsInTree, subscriptionWants } from '../domain/webhooks/repo.js';
import { type ClaimedDelivery, insertNewDeliveries, pendingDelivery } from '../domain/webhooks/queue.js';
import { advanceCursor, lockCursor, orgsAheadOfCursor } from '../log/cursors.js';
import { committedOffset, eventsInRange } from '../log/reads.js';

/** Events of one org turned into deliveries per round; an org with more is fanned out again in the next round. */
const FAN_OUT_BATCH = 500;
/** Orgs a poll looks at; the next poll finds the rest. */
const ORG_SCAN_LIMIT = 1000;

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
 */
async function fanOutOrg(tx: Tx, orgId: string, batchSize: number, claim?: FanOutClaim): Promise<FanOutResult> {
  const subscriptionIds = new Set<string>();
  const claimed: FanOutResult['claimed'] = [];
  const offset = await lockCursor(tx, orgId, nowIso());
  if (offset === null) return { subscriptionIds, more: false, claimed };
  // The org's committed offset is read before its subscriptions, as the events were before: an
  // event is matched against the subscriptions that existed once it had committed.
  const last = Math.min(await committedOffset(tx.db, orgId), offset + batchSize);
  if (last <= offset) return { subscriptionIds, more: false, claimed };
  const scope = await findOrgScope({ db: tx.db }, orgId);
  const subscriptions = scope ? await activeSubscriptionsInTree(tx.db, scope) : [];
  // Most orgs subscribe nothing: their cursor moves on without their events (and bodies) being read.
  const events = subscriptions.length === 0 ? [] : await eventsInRange(tx.db, orgId, offset, last);
  const now = nowIso();
  const rows: WebhookDeliveryTable[] = [];
  /** Rows written claimed, by id: handed to the worker only if their insert took place. */
  const taken = new Map<string, { subscription: WebhookSubscriptionTable; delivery: ClaimedDelivery }>();
  const room = new Map(subscriptions.map((sub) => [sub.id, claim ? claim.room(sub.id) : 0]));
  for (const event of events) {
    for (const sub of subscriptions) {
      if (!subscriptionWants(sub, orgId, event.event_type, event.created_at)) continue;
      const row = pendingDelivery(newId(), sub.id, orgId, event, now);
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
  const inserted = await insertNewDeliveries(tx, rows);
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
  await advanceCursor(tx, orgId, last, now);
  return { subscriptionIds, more: last === offset + batchSize, claimed };
}

/**
 * The fan-out of committed events into deliveries, per org in stream order. It keeps the orgs with
 * new events: those a commit announced, and on a poll every org whose stream is ahead of its cursor.
 */
export class EventFanOut {
  private readonly pendingOrgs = new Set<string>();
  private scanAllOrgs = true;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly stopping: AbortSignal,
  ) {}

  committed(orgId: string): void {
    this.pendingOrgs.add(orgId);
  }

  /** The next round also looks for orgs whose announcement was lost (or made by another process). */
  poll(): void {
    this.scanAllOrgs = true;
  }

  /** The orgs to fan out in the next round (read outside its transaction). */
  async takeOrgs(): Promise<Set<string>> {
    const orgs = new Set(this.pendingOrgs);
    this.pendingOrgs.clear();
    if (this.scanAllOrgs) {
      this.scanAllOrgs = false;
      for (const id of await orgsAheadOfCursor(this.db, ORG_SCAN_LIMIT)) orgs.add(id);
    }
    return orgs;
  }

  /**
   * Fans out every org of a round in its transaction; `claim` takes new deliveries at once (not once
   * stopping). `more` tells that an org has events left, kept for the next round.
   */
  async run(tx: Tx, orgs: Set<string>, claim: FanOutClaim): Promise<FanOutResult> {
    const results: [string, FanOutResult][] = [];
    for (const orgId of orgs) results.push([orgId, await fanOutOrg(tx, orgId, FAN_OUT_BATCH, this.stopping.aborted ? undefined : claim)]);
    const out: FanOutResult = { subscriptionIds: new Set(), more: false, claimed: [] };
    for (const [orgId, { subscriptionIds, more, claimed }] of results) {
      for (const id of subscriptionIds) out.subscriptionIds.add(id);
      out.claimed.push(...claimed);
      if (more) {
        this.pendingOrgs.add(orgId);
        out.more = true;
      }
    }
    return out;
  }
}
