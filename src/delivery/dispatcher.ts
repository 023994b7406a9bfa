import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import type { AppContext } from '../context.js';
import { inTransaction, type Tx } from '../db/connect.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import type { WebhookSubscriptionTable } from '../db/types.js';
import { nowIso } from '../domain/shared/ids.js';
import { signingSecrets } from '../domain/webhooks/schema.js';
import { signatureHeader } from '../domain/webhooks/signing.js';
import { attachBodies, type ClaimedDelivery, claimDueDeliveries } from './claims.js';
import { type FanOutClaim, type FanOutResult, fanOutOrg, orgsBehind } from './fan-out.js';
import { beat, HEARTBEAT_INTERVAL_MS, registerWorker, retireWorker } from './liveness.js';
import { type SendResult, WebhookSender } from './http-sender.js';
import { type DeliveryLogger, describeError, silentLogger } from './log.js';
import { type AttemptOutcome, recordOutcomes } from './outcomes.js';

export interface DispatcherOptions {
  /** Deadline of one delivery request (a 2xx within it is success). */
  requestTimeoutMs?: number;
  /**
   * How long a claim is exclusive. The default covers the wait of the last claimed delivery of a
   * subscription behind the requests before it plus its own: (1 + claimBatch ÷ concurrency) × the
   * request timeout + 15 s, so a live worker never loses its claim.
   */
  leaseMs?: number;
  /** The polling backstop, for lost wake-ups, other processes' writes on SQLite, and due retries. */
  pollIntervalMs?: number;
  /** In-flight requests per subscription in this process: a slow subscriber ties up only its own slots (default WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION). */
  perSubscriptionConcurrency?: number;
  /** In-flight requests in this process (default WEBHOOK_MAX_IN_FLIGHT). */
  maxInFlight?: number;
  /**
   * Most deliveries of one subscription claimed in one round, and the reserve kept claimed beyond the
   * requests in flight, so finishing requests start the next ones without a database round trip
   * (default WEBHOOK_CLAIM_BATCH).
   */
  claimBatch?: number;
  /** How long stop() lets requests in flight finish before interrupting them. */
  stopGraceMs?: number;
  workerId?: string;
  logger?: DeliveryLogger;
}

/** A subscription, what was asked of the claim (null: taken at fan-out), what it got. */
type Claimed = readonly [WebhookSubscriptionTable, number | null, ClaimedDelivery[]];

const FAN_OUT_BATCH = 500;
const ORG_SCAN_LIMIT = 1000;
const OUTCOME_BATCH = 500;
const FLUSH_RETRY_MS = 1000;
const FLUSH_GATHER_MS = 5;

/**
 * The webhook delivery worker. Committed events are fanned out into deliveries (per org, in stream
 * order), due deliveries are claimed per subscription under a lease, signed and sent, and every
 * attempt's outcome is recorded in batches. Wake-ups come from the in-process event bus (fed by
 * LISTEN/NOTIFY on PostgreSQL) and a periodic poll; the database is always the source of truth.
 */
export class Dispatcher {
  readonly workerId: string;
  private readonly requestTimeoutMs: number;
  private readonly leaseMs: number;
  private readonly pollIntervalMs: number;
  private readonly perSubscription: number;
  private readonly maxInFlight: number;
  private readonly claimBatch: number;
  /** A subscription is claimed for again once this many of its held deliveries are gone. */
  private readonly refillAt: number;
  private readonly stopGraceMs: number;
  private readonly log: DeliveryLogger;
  private readonly sender: WebhookSender;
  private readonly interrupt = new AbortController();

  private stopped = false;
  private started = false;
  private unsubscribe: (() => void) | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private readonly retryTimers = new Set<NodeJS.Timeout>();

  private readonly pendingOrgs = new Set<string>();
  private scanAllOrgs = true;
  private readonly dirtySubs = new Set<string>();
  private allSubsDirty = true;
  /** Subscriptions whose last claim was limited by capacity, not by what was due. */
  private readonly saturated = new Set<string>();
  private readonly subscriptions = new Map<string, WebhookSubscriptionTable>();

  private readonly inFlightBySub = new Map<string, number>();
  /** Claimed (leased to this worker) but not started yet, per subscription. */
  private readonly buffers = new Map<string, ClaimedDelivery[]>();
  /** Subscriptions with buffered deliveries waiting for a process-wide slot. */
  private readonly blocked = new Set<string>();
  /** In flight plus buffered. */
  private totalHeld = 0;
  private roundRobin = 0;
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  /** Registered as a live worker (see liveness.ts); no claim is made before. */
  private registered: Promise<void> | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;

  /** Deliveries taken at fan-out in the round running now, not yet buffered (it has not committed). */
  private readonly roundTaken = new Map<string, number>();
  private roundTakenTotal = 0;

  private pumping: Promise<void> | null = null;
  private pumpAgain = false;

  private readonly outcomes: AttemptOutcome[] = [];
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly ctx: AppContext,
    options: DispatcherOptions = {},
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? ctx.config.WEBHOOK_TIMEOUT_SECONDS * 1000;
    this.perSubscription = options.perSubscriptionConcurrency ?? ctx.config.WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION;
    this.maxInFlight = options.maxInFlight ?? ctx.config.WEBHOOK_MAX_IN_FLIGHT;
    this.claimBatch = options.claimBatch ?? ctx.config.WEBHOOK_CLAIM_BATCH;
    for (const [name, value] of [
      ['perSubscriptionConcurrency', this.perSubscription],
      ['maxInFlight', this.maxInFlight],
      ['claimBatch', this.claimBatch],
    ] as const) {
      if (!Number.isInteger(value) || value < 1) throw new Error(`The dispatcher's ${name} must be a positive integer.`);
    }
    this.refillAt = Math.ceil(this.claimBatch / 2);
    // A claimed delivery may wait behind its subscription's earlier requests (claimBatch of them,
    // perSubscription at a time) or, as long, for a process-wide slot, before its own starts.
    this.leaseMs = options.leaseMs ?? (1 + Math.max(1, Math.ceil(this.claimBatch / this.perSubscription))) * this.requestTimeoutMs + 15_000;
    if (this.leaseMs <= this.requestTimeoutMs) throw new Error('The delivery lease must be longer than the request timeout.');
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.stopGraceMs = options.stopGraceMs ?? 5000;
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.log = options.logger ?? silentLogger;
    // Every request in flight listens for the stop signal.
    setMaxListeners(0, this.interrupt.signal);
    // One keep-alive connection per request a subscription may have in flight.
    this.sender = new WebhookSender({
      allowPrivateTargets: ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      timeoutMs: this.requestTimeoutMs,
      connectionsPerOrigin: this.perSubscription,
    });
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.registered = this.register();
    this.heartbeatTimer = setInterval(() => {
      beat(this.ctx.db.db, this.workerId).catch((err) => this.log.warn(describeError(err), 'webhook worker heartbeat failed'));
    }, HEARTBEAT_INTERVAL_MS);
    this.heartbeatTimer.unref();
    this.unsubscribe = this.ctx.bus.onCommitted(({ orgId }) => {
      this.pendingOrgs.add(orgId);
      this.wake();
    });
    this.pollTimer = setInterval(() => {
      this.scanAllOrgs = true;
      this.allSubsDirty = true;
      this.wake();
    }, this.pollIntervalMs);
    // Deliberately not unref'd: it is what keeps a standalone worker process alive; stop() clears it.
    this.wake();
  }

  /** Stops claiming, lets requests in flight finish (interrupting them after the grace period), records outcomes. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe?.();
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    await this.pumping;
    await this.releaseBuffered();
    if (this.inFlight > 0) {
      const grace = setTimeout(() => this.interrupt.abort(), this.stopGraceMs);
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      clearTimeout(grace);
    }
    while (this.flushing || this.outcomes.length > 0) {
      if (!this.flushing) this.flush();
      await this.flushing;
      if (this.outcomes.length > 0 && !this.flushing) break; // the database is unreachable: leases will expire
    }
    await retireWorker(this.ctx.db.db, this.workerId).catch((err) => this.log.warn(describeError(err), 'removing the worker row failed; it ages out'));
    await this.sender.close();
  }

  /** Requests in flight and deliveries claimed but not started, in this process. */
  stats(): { inFlight: number; buffered: number; held: number } {
    let buffered = 0;
    for (const b of this.buffers.values()) buffered += b.length;
    return { inFlight: this.inFlight, buffered, held: this.totalHeld };
  }

  private wake(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = this.pump().finally(() => {
      this.pumping = null;
      if (this.pumpAgain) this.wake();
    });
  }

  private async pump(): Promise<void> {
    do {
      // Yield to the event loop first: on SQLite every query completes as a microtask, so without
      // this a stream of wake-ups would keep the loop from reading responses and accepting requests.
      // It also lets a burst of commits coalesce into one round.
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.pumpAgain = false;
      try {
        await this.registered;
        await this.round();
      } catch (err) {
        // A database hiccup: the poll tries again; nothing is lost because nothing was acknowledged.
        // An outage is logged once for its whole length, not once a round.
        if (isDatabaseUnavailable(err)) this.ctx.dbOutage.failed(err);
        else this.log.error(describeError(err), 'webhook dispatcher round failed');
        return;
      }
    } while (this.pumpAgain && !this.stopped);
  }

  /** Becomes a live worker; until it is, the first round waits (others would take its claims over). */
  private async register(): Promise<void> {
    for (;;) {
      try {
        const [host, pid] = this.workerId.split(':');
        const tookOver = await registerWorker(this.ctx.db.db, {
          workerId: this.workerId,
          host: host ?? hostname(),
          pid: Number(pid) || process.pid,
        });
        if (tookOver > 0) this.log.info({ workers: tookOver, workerId: this.workerId }, 'took over the deliveries of workers of this machine that are gone');
        return;
      } catch (err) {
        if (this.stopped) return;
        this.log.error(describeError(err), 'registering the webhook worker failed; retrying');
        await new Promise((r) => setTimeout(r, this.pollIntervalMs));
      }
    }
  }

  /**
   * One round, in one transaction (one commit, and on SQLite one place in the group-commit queue):
   * fan-out of the orgs with new events, then claims for the subscriptions with work, the deliveries
   * just fanned out included. Sending starts once it has committed.
   */
  private async round(): Promise<void> {
    const orgs = new Set(this.pendingOrgs);
    this.pendingOrgs.clear();
    if (this.scanAllOrgs) {
      this.scanAllOrgs = false;
      for (const id of await orgsBehind(this.ctx, ORG_SCAN_LIMIT)) orgs.add(id);
    }
    if (this.stopped || (orgs.size === 0 && this.dirtySubs.size === 0 && !this.allSubsDirty)) return;
    try {
      const claims = await inTransaction(this.ctx.db, async (tx) => {
        const taken = await this.fanOut(tx, orgs);
        return [...taken, ...(await this.claim(tx))];
      });
      this.startClaimed(claims);
    } finally {
      this.roundTaken.clear();
      this.roundTakenTotal = 0;
    }
  }

  /**
   * Fan-out of every org of this round (in the round's transaction). New deliveries of a subscription
   * with room in this process and no backlog of due ones waiting in the database are written already
   * claimed by it (they are sent once the round commits); the rest are claimed in stream order after.
   */
  private async fanOut(tx: Tx, orgs: Set<string>): Promise<Claimed[]> {
    const nowMs = Date.now();
    const take: FanOutClaim = {
      workerId: this.workerId,
      claimedUntil: new Date(nowMs + this.leaseMs).toISOString(),
      room: (subId) => (this.saturated.has(subId) ? 0 : Math.max(0, Math.min(this.perSubscription + this.claimBatch - this.held(subId), this.heldBudget()))),
      took: (subId, count) => {
        this.roundTaken.set(subId, (this.roundTaken.get(subId) ?? 0) + count);
        this.roundTakenTotal += count;
      },
    };
    const results: [string, FanOutResult][] = [];
    for (const orgId of orgs) results.push([orgId, await fanOutOrg(tx, orgId, FAN_OUT_BATCH, this.stopped ? undefined : take)]);
    const taken: Claimed[] = [];
    for (const [orgId, { subscriptionIds, more, claimed }] of results) {
      for (const id of subscriptionIds) this.dirtySubs.add(id);
      // Not a claim of what was due: the subscription's saturation state is left as it is.
      for (const { subscription, deliveries } of claimed) taken.push([subscription, null, deliveries]);
      if (more) {
        this.pendingOrgs.add(orgId);
        this.pumpAgain = true;
      }
    }
    return taken;
  }

  /**
   * Subscriptions to claim for in this round, with their URL and secrets, read in this round: every
   * active one on a poll, between polls those with work (new deliveries, a retry due, room again).
   */
  private async candidateSubscriptions(tx: Tx): Promise<WebhookSubscriptionTable[]> {
    const query = tx.db.selectFrom('webhook_subscriptions').selectAll().where('status', '=', 'active');
    if (this.allSubsDirty) {
      this.allSubsDirty = false;
      this.dirtySubs.clear();
      const rows = await query.execute();
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
    const rows = await query.where('id', 'in', ids).execute();
    for (const row of rows) this.subscriptions.set(row.id, row);
    return rows;
  }

  private held(subId: string): number {
    return (this.inFlightBySub.get(subId) ?? 0) + (this.buffers.get(subId)?.length ?? 0) + (this.roundTaken.get(subId) ?? 0);
  }

  /**
   * Claims for each candidate subscription enough deliveries to keep its in-flight slots busy plus
   * up to `claimBatch` in reserve, so a finishing request starts the next one without a database
   * round trip. It claims again once half the reserve is used up, in batches rather than one by one.
   */
  private async claim(tx: Tx): Promise<Claimed[]> {
    const candidates = await this.candidateSubscriptions(tx);
    if (candidates.length === 0 || this.stopped) return [];
    if (this.heldBudget() <= 0) {
      // No room in this process: try them all again as requests finish.
      for (const sub of candidates) this.dirtySubs.add(sub.id);
      return [];
    }
    // Start at a different subscription each round so that, when the process-wide budget runs out,
    // the same subscriptions are not always the ones served first.
    const offset = this.roundRobin++ % candidates.length;
    const subs = [...candidates.slice(offset), ...candidates.slice(0, offset)];
    const depth = this.perSubscription + this.claimBatch;
    // The budget shrinks by what each claim actually returned, not by what it asked for.
    const out: [WebhookSubscriptionTable, number][] = [];
    const rows: Awaited<ReturnType<typeof claimDueDeliveries>>[] = [];
    let budget = this.heldBudget();
    for (const sub of subs) {
      const held = this.held(sub.id);
      const room = Math.min(depth - held, this.claimBatch, budget);
      if (room <= 0 || (held > 0 && room < this.refillAt)) {
        this.saturated.add(sub.id); // claimed again once its reserve runs low
        if (budget <= 0) this.dirtySubs.add(sub.id); // and, if the budget ran out, at the next round
        continue;
      }
      const claimed = await claimDueDeliveries(tx, sub.id, room, this.workerId, this.leaseMs);
      budget -= claimed.length;
      out.push([sub, room]);
      rows.push(claimed);
    }
    const withBodies = await attachBodies(tx, rows);
    return out.map(([sub, room], i) => [sub, room, withBodies[i]!] as const);
  }

  /** Deliveries this process may still claim: every in-flight slot busy plus one claim batch in reserve. */
  private heldBudget(): number {
    return this.maxInFlight + this.claimBatch - this.totalHeld - this.roundTakenTotal;
  }

  /** Buffers what a round claimed (once its transaction committed) and starts sending it. */
  private startClaimed(claims: Claimed[]): void {
    for (const [sub, room, claimed] of claims) {
      // A full claim means more may be due. A partial one emptied the due queue; new work then
      // arrives through fan-out, a retry timer or the poll.
      if (room !== null) {
        if (claimed.length === room) this.saturated.add(sub.id);
        else this.saturated.delete(sub.id);
      }
      if (claimed.length === 0) continue;
      this.subscriptions.set(sub.id, sub);
      const buffer = this.buffers.get(sub.id) ?? [];
      buffer.push(...claimed);
      this.buffers.set(sub.id, buffer);
      this.totalHeld += claimed.length;
      this.startSends(sub);
    }
  }

  /** Starts buffered deliveries of a subscription while it and the process have free slots. */
  private startSends(sub: WebhookSubscriptionTable): void {
    const buffer = this.buffers.get(sub.id);
    while (buffer && buffer.length > 0 && !this.stopped) {
      if ((this.inFlightBySub.get(sub.id) ?? 0) >= this.perSubscription) return;
      if (this.inFlight >= this.maxInFlight) {
        this.blocked.add(sub.id);
        return;
      }
      void this.deliver(sub, buffer.shift()!);
    }
    if (buffer && buffer.length === 0) this.buffers.delete(sub.id);
  }

  private async deliver(sub: WebhookSubscriptionTable, delivery: ClaimedDelivery): Promise<void> {
    this.inFlight++;
    this.inFlightBySub.set(sub.id, (this.inFlightBySub.get(sub.id) ?? 0) + 1);
    const startedAt = nowIso();
    let result: SendResult;
    try {
      if (delivery.body === null) {
        result = { ok: false, statusCode: null, body: null, error: 'event no longer available', durationMs: 0, retryAfterMs: null };
      } else {
        const timestamp = new Date();
        const headers = {
          'content-type': 'application/json',
          'user-agent': 'emergency-api-webhooks/1.0',
          // The event id, identical on every retry and replay: what receivers deduplicate on.
          'webhook-id': delivery.event_id,
          'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
          'webhook-signature': signatureHeader(signingSecrets(sub), delivery.event_id, timestamp, delivery.body),
        };
        result = await this.sender.send(sub.url, headers, delivery.body, this.interrupt.signal);
      }
    } catch (err) {
      result = { ok: false, statusCode: null, body: null, error: 'request failed', durationMs: 0, retryAfterMs: null };
      this.log.error({ deliveryId: delivery.id, ...describeError(err) }, 'webhook send failed unexpectedly');
    }
    if (!result.ok && result.error) {
      this.log.warn(
        { deliveryId: delivery.id, subscriptionId: sub.id, origin: new URL(sub.url).origin, statusCode: result.statusCode, error: result.error },
        'webhook attempt failed',
      );
    } else if (!result.ok) {
      this.log.info({ deliveryId: delivery.id, subscriptionId: sub.id, statusCode: result.statusCode }, 'webhook attempt rejected');
    }
    this.recordMetrics(delivery, startedAt, result);
    this.outcomes.push({ delivery, startedAt, result, interrupted: this.interrupt.signal.aborted && result.error === 'interrupted: worker stopping' });
    this.inFlight--;
    this.totalHeld--;
    const left = (this.inFlightBySub.get(sub.id) ?? 1) - 1;
    if (left === 0) this.inFlightBySub.delete(sub.id);
    else this.inFlightBySub.set(sub.id, left);
    this.flush();
    if (this.inFlight === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
    this.startSends(sub);
    for (const id of [...this.blocked]) {
      if (this.inFlight >= this.maxInFlight) break;
      this.blocked.delete(id);
      const other = this.subscriptions.get(id);
      if (other) this.startSends(other);
    }
    if (this.saturated.has(sub.id) && this.held(sub.id) <= this.perSubscription + this.claimBatch - this.refillAt) this.dirtySubs.add(sub.id);
    // Also subscriptions left waiting when the process-wide budget ran out.
    if (this.dirtySubs.size > 0) this.wake();
  }

  /** On stop: deliveries claimed but never started go back to the queue at once, not after the lease. */
  private async releaseBuffered(): Promise<void> {
    const ids = [...this.buffers.values()].flat().map((d) => d.id);
    this.buffers.clear();
    for (let i = 0; i < ids.length; i += 500) {
      await this.ctx.db.db
        .updateTable('webhook_deliveries')
        .set({ claimed_until: null, claimed_by: null })
        .where('id', 'in', ids.slice(i, i + 500))
        .where('claimed_by', '=', this.workerId)
        .execute()
        .catch((err) => this.log.warn(describeError(err), 'releasing claimed deliveries failed; their lease will expire'));
    }
  }

  /** Attempts by result, and the commit-to-first-attempt lag, for /metrics. */
  private recordMetrics(delivery: ClaimedDelivery, startedAt: string, result: SendResult): void {
    const metrics = this.ctx.metrics;
    metrics.webhookAttempts.inc({ result: result.ok ? 'success' : result.statusCode === null ? 'error' : result.statusCode >= 500 ? 'http_5xx' : 'http_4xx' });
    if (delivery.attempt_count === 0 && delivery.body) {
      try {
        const createdAt = Date.parse((JSON.parse(delivery.body) as { createdAt?: string }).createdAt ?? '');
        if (Number.isFinite(createdAt)) metrics.webhookLag.observe(Math.max(0, Date.parse(startedAt) - createdAt) / 1000);
      } catch {
        /* a ping or a body that is not an envelope has no commit time */
      }
    }
  }

  /** Writes finished attempts in batches: one transaction for everything that finished meanwhile. */
  private flush(): void {
    if (this.flushing) return;
    this.flushing = (async () => {
      // A short gather window: responses finishing within it share one transaction (one commit
      // per batch rather than per attempt). It delays only the bookkeeping, never a send.
      await new Promise((r) => setTimeout(r, FLUSH_GATHER_MS));
      while (this.outcomes.length > 0) {
        const batch = this.outcomes.splice(0, OUTCOME_BATCH);
        try {
          const effects = await recordOutcomes(this.ctx, batch, this.workerId);
          for (const { subscriptionId, delayMs } of effects.retries) this.scheduleRetryWake(subscriptionId, delayMs);
          for (const id of effects.disabledSubscriptions) {
            this.subscriptions.delete(id);
            this.log.warn({ subscriptionId: id }, 'webhook subscription disabled');
          }
        } catch (err) {
          this.log.error(describeError(err), 'recording webhook attempts failed; will retry');
          this.outcomes.unshift(...batch);
          await new Promise((r) => setTimeout(r, FLUSH_RETRY_MS));
          if (this.stopped) return;
        }
      }
    })().finally(() => {
      this.flushing = null;
      if (this.outcomes.length > 0 && !this.stopped) this.flush();
    });
  }

  /** Retries sooner than the next poll get their own timer. */
  private scheduleRetryWake(subscriptionId: string, delayMs: number): void {
    if (this.stopped || delayMs >= this.pollIntervalMs) return;
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      this.dirtySubs.add(subscriptionId);
      this.wake();
    }, delayMs + 5);
    timer.unref();
    this.retryTimers.add(timer);
  }
}

/** Starts a dispatcher and returns its stop function (the shape startServer's background parts use). */
export function startDispatcher(ctx: AppContext, options: DispatcherOptions = {}): { dispatcher: Dispatcher; stop: () => Promise<void> } {
  const dispatcher = new Dispatcher(ctx, options);
  dispatcher.start();
  return { dispatcher, stop: () => dispatcher.stop() };
}
