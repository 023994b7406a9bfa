import type { AppContext } from '../context.js';
import { inTransaction } from '../db/connect.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import type { Claim, DeliveryClaimer } from './claimer.js';
import type { EventFanOut } from './fan-out.js';
import type { InFlightScheduler } from './in-flight.js';
import type { WorkerLiveness } from './liveness.js';
import { describeError } from '../observability/describe-error.js';
import type { DeliveryLogger } from './log.js';
import { releaseClaims } from '../domain/webhooks/queue.js';

export interface ClaimLoopParts {
  fanOut: EventFanOut;
  claimer: DeliveryClaimer;
  scheduler: InFlightScheduler;
  liveness: WorkerLiveness;
}

/**
 * Runs rounds, one at a time, whenever something may have become due: a commit, a retry timer, a freed
 * slot, the poll. A round fans out the orgs with new events and claims for the subscriptions with work in
 * one transaction (one commit, and on SQLite one place in the group-commit queue), then hands what it
 * got to the scheduler. Wake-ups during a round make one more round, not one each.
 */
export class ClaimLoop {
  private running: Promise<void> | null = null;
  private runAgain = false;
  private readonly retryTimers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly ctx: AppContext,
    private readonly parts: ClaimLoopParts,
    private readonly settings: { workerId: string; pollIntervalMs: number },
    private readonly stopping: AbortSignal,
    private readonly log: DeliveryLogger,
  ) {}

  /** An org committed events (announced by the event bus). */
  committed(orgId: string): void {
    this.parts.fanOut.committed(orgId);
    this.wake();
  }

  /** The backstop for lost wake-ups, other processes' writes on SQLite, and retries due later than a poll. */
  poll(): void {
    this.parts.fanOut.poll();
    this.parts.claimer.poll();
    this.wake();
  }

  wake(): void {
    if (this.stopping.aborted) return;
    if (this.running) {
      this.runAgain = true;
      return;
    }
    this.running = this.run().finally(() => {
      this.running = null;
      if (this.runAgain) this.wake();
    });
  }

  /** A retry due sooner than the next poll gets a timer of its own. */
  retryDue(subscriptionId: string, delayMs: number): void {
    if (this.stopping.aborted || delayMs >= this.settings.pollIntervalMs) return;
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      this.parts.claimer.needs(subscriptionId);
      this.wake();
    }, delayMs + 5);
    timer.unref();
    this.retryTimers.add(timer);
  }

  /** After a request finished: its subscription may want a refill, or others a freed budget. */
  sendFinished(subscriptionId: string): void {
    if (this.parts.claimer.refill(subscriptionId)) this.wake();
  }

  /** Once stopping: waits for the round under way, and hands claimed deliveries never started back to the queue at once. */
  async stop(): Promise<void> {
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    await this.running;
    const ids = this.parts.scheduler.takeBuffered().map((d) => d.id);
    await releaseClaims(this.ctx.db.db, ids, this.settings.workerId, (err) =>
      this.log.warn(describeError(err), 'releasing claimed deliveries failed; their lease will expire'),
    );
  }

  private async run(): Promise<void> {
    do {
      // Yield to the event loop first: on SQLite every query completes as a microtask, so without
      // this a stream of wake-ups would keep the loop from reading responses and accepting requests.
      // It also lets a burst of commits coalesce into one round.
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.runAgain = false;
      try {
        await this.parts.liveness.registered();
        await this.round();
      } catch (err) {
        // A database hiccup: the poll tries again; nothing is lost because nothing was acknowledged.
        // An outage is logged once for its whole length, not once a round.
        if (isDatabaseUnavailable(err)) this.ctx.dbOutage.failed(err);
        else this.log.error(describeError(err), 'webhook dispatcher round failed');
        return;
      }
    } while (this.runAgain && !this.stopping.aborted);
  }

  private async round(): Promise<void> {
    const { fanOut, claimer, scheduler } = this.parts;
    const orgs = await fanOut.takeOrgs();
    if (this.stopping.aborted || (orgs.size === 0 && !claimer.hasWork())) return;
    try {
      const claims = await inTransaction(this.ctx.db, async (tx): Promise<Claim[]> => {
        const fanned = await fanOut.run(tx, orgs, claimer.fanOutClaim());
        for (const id of fanned.subscriptionIds) claimer.needs(id);
        if (fanned.more) this.runAgain = true;
        const taken = fanned.claimed.map(({ subscription, deliveries }) => ({ subscription, asked: null, deliveries }));
        return [...taken, ...(await claimer.claim(tx))];
      });
      for (const claim of claims) {
        claimer.settle(claim);
        if (claim.deliveries.length > 0) scheduler.hand(claim.subscription, claim.deliveries);
      }
    } finally {
      claimer.endRound();
    }
  }
}
