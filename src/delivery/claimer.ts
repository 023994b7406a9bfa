import type { Tx } from '../db/connect.js';
import type { WebhookSubscriptionTable } from '../db/types.js';
import type { FanOutClaim } from './fan-out.js';
import type { InFlightScheduler } from './in-flight.js';
import { aliveSince } from './liveness.js';
import { activeSubscriptions, attachBodies, type ClaimedDelivery, claimDueDeliveries, type LeaseTerms } from '../domain/webhooks/queue.js';

/** What one subscription got in a round; `asked` is null for deliveries taken at fan-out rather than claimed. */
export interface Claim {
  subscription: WebhookSubscriptionTable;
  asked: number | null;
  deliveries: ClaimedDelivery[];
}

export interface ClaimerSettings {
  workerId: string;
  leaseMs: number;
  perSubscription: number;
  maxInFlight: number;
  claimBatch: number;
}

/**
 * Decides which subscriptions to claim due deliveries for, and how many: enough to keep each one's
 * in-flight slots busy plus up to `claimBatch` in reserve, so a finishing request starts the next one
 * without a database round trip. A subscription is claimed for again once half its reserve is used up,
 * in batches rather than one by one, and the process as a whole holds at most every slot plus one batch.
 */
export class DeliveryClaimer {
  /** A subscription is claimed for again once this many of its held deliveries are gone. */
  private readonly refillAt: number;
  /** Subscriptions with work since the last claim for them: new deliveries, a retry due, room again. */
  private readonly dirtySubs = new Set<string>();
  private allSubsDirty = true;
  /** Subscriptions whose last claim was limited by capacity, not by what was due. */
  private readonly saturated = new Set<string>();
  /** Each active subscription's row as last read: what its deliveries are signed and sent with. */
  private readonly subscriptions = new Map<string, WebhookSubscriptionTable>();
  private roundRobin = 0;
  /** Deliveries taken at fan-out in the round running now, not yet handed to the scheduler (it has not committed). */
  private readonly roundTaken = new Map<string, number>();
  private roundTakenTotal = 0;

  constructor(
    private readonly settings: ClaimerSettings,
    private readonly scheduler: InFlightScheduler,
    private readonly stopping: AbortSignal,
  ) {
    this.refillAt = Math.ceil(settings.claimBatch / 2);
  }

  /** The next round reads every active subscription again (a rotation or a disable made elsewhere applies from then on). */
  poll(): void {
    this.allSubsDirty = true;
  }

  needs(subscriptionId: string): void {
    this.dirtySubs.add(subscriptionId);
  }

  hasWork(): boolean {
    return this.dirtySubs.size > 0 || this.allSubsDirty;
  }

  current(subscriptionId: string): WebhookSubscriptionTable | undefined {
    return this.subscriptions.get(subscriptionId);
  }

  forget(subscriptionId: string): void {
    this.subscriptions.delete(subscriptionId);
  }

  /**
   * After a request of the subscription finished: a saturated one whose reserve ran low is claimed for
   * again. True when some subscription waits for a round.
   */
  refill(subscriptionId: string): boolean {
    const { perSubscription, claimBatch } = this.settings;
    if (this.saturated.has(subscriptionId) && this.held(subscriptionId) <= perSubscription + claimBatch - this.refillAt) this.dirtySubs.add(subscriptionId);
    // Also subscriptions left waiting when the process-wide budget ran out.
    return this.dirtySubs.size > 0;
  }

  /**
   * New deliveries of a subscription with room in this process and no backlog of due ones waiting in
   * the database are written already claimed at fan-out; the rest are claimed in stream order after.
   */
  fanOutClaim(): FanOutClaim {
    const { workerId, leaseMs, perSubscription, claimBatch } = this.settings;
    return {
      workerId,
      claimedUntil: new Date(Date.now() + leaseMs).toISOString(),
      room: (subId) => {
        if (this.saturated.has(subId)) return 0;
        const held = this.held(subId);
        return Math.max(held === 0 ? 1 : 0, Math.min(perSubscription + claimBatch - held, this.budget()));
      },
      took: (subId, count) => {
        this.roundTaken.set(subId, (this.roundTaken.get(subId) ?? 0) + count);
        this.roundTakenTotal += count;
      },
    };
  }

  /** Claims for the subscriptions with work, in the round's transaction. */
  async claim(tx: Tx): Promise<Claim[]> {
    const candidates = await this.candidateSubscriptions(tx);
    if (candidates.length === 0 || this.stopping.aborted) return [];
    const { perSubscription, claimBatch } = this.settings;
    // Start at a different subscription each round so that, when the process-wide budget runs out,
    // the same subscriptions are not always the ones served first.
    const offset = this.roundRobin++ % candidates.length;
    const subs = [...candidates.slice(offset), ...candidates.slice(0, offset)];
    const depth = perSubscription + claimBatch;
    // The budget shrinks by what each claim actually returned, not by what it asked for.
    const asked: [WebhookSubscriptionTable, number][] = [];
    const rows: Awaited<ReturnType<typeof claimDueDeliveries>>[] = [];
    let budget = this.budget();
    for (const sub of subs) {
      const held = this.held(sub.id);
      // With the budget used up by others, a subscription holding nothing still claims one: another
      // subscription's backlog of slow sends must not keep a fresh delivery from being claimed.
      const room = held === 0 ? Math.max(1, Math.min(claimBatch, budget)) : Math.min(depth - held, claimBatch, budget);
      if (room <= 0 || (held > 0 && room < this.refillAt)) {
        this.saturated.add(sub.id); // claimed again once its reserve runs low
        if (budget <= 0) this.dirtySubs.add(sub.id); // and, if the budget ran out, at the next round
        continue;
      }
      const claimed = await claimDueDeliveries(tx, sub.id, room, this.leaseTerms());
      budget -= claimed.length;
      asked.push([sub, room]);
      rows.push(claimed);
    }
    const withBodies = await attachBodies(tx, rows);
    return asked.map(([subscription, room], i) => ({ subscription, asked: room, deliveries: withBodies[i]! }));
  }

  /**
   * Takes note of what a round got for one subscription, once its transaction committed. A full claim
   * means more may be due; a partial one emptied the due queue, and new work then arrives through
   * fan-out, a retry timer or the poll.
   */
  settle({ subscription, asked, deliveries }: Claim): void {
    if (asked !== null) {
      if (deliveries.length === asked) this.saturated.add(subscription.id);
      else this.saturated.delete(subscription.id);
    }
    if (deliveries.length > 0) this.subscriptions.set(subscription.id, subscription);
  }

  /** The round's fan-out takings are in the scheduler now (or were rolled back). */
  endRound(): void {
    this.roundTaken.clear();
    this.roundTakenTotal = 0;
  }

  /**
   * Subscriptions to claim for in this round, with their URL and secrets, read in this round: every
   * active one on a poll, between polls those with work.
   */
  private async candidateSubscriptions(tx: Tx): Promise<WebhookSubscriptionTable[]> {
    if (this.allSubsDirty) {
      this.allSubsDirty = false;
      this.dirtySubs.clear();
      const rows = await activeSubscriptions(tx);
      this.subscriptions.clear();
      for (const row of rows) this.subscriptions.set(row.id, row);
      return rows;
    }
    if (this.dirtySubs.size === 0) return [];
    const ids = [...this.dirtySubs];
    this.dirtySubs.clear();
    // Read again, not taken from the map: a rotation or a disable made since (by the admin CLI or
    // another instance) applies from the next claim on, so a delivery is signed with the secrets
    // current when it is claimed.
    const rows = await activeSubscriptions(tx, ids);
    for (const row of rows) this.subscriptions.set(row.id, row);
    return rows;
  }

  private held(subscriptionId: string): number {
    return this.scheduler.heldBy(subscriptionId) + (this.roundTaken.get(subscriptionId) ?? 0);
  }

  /** Deliveries this process may still claim: every in-flight slot busy plus one claim batch in reserve. */
  private budget(): number {
    return this.settings.maxInFlight + this.settings.claimBatch - this.scheduler.held - this.roundTakenTotal;
  }

  /** Computed per claim: a lease runs from the moment it is taken. */
  private leaseTerms(): LeaseTerms {
    const nowMs = Date.now();
    return {
      workerId: this.settings.workerId,
      now: new Date(nowMs).toISOString(),
      until: new Date(nowMs + this.settings.leaseMs).toISOString(),
      aliveSince: aliveSince(nowMs),
    };
  }
}
