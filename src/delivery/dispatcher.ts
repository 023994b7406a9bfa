import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { AppContext } from '../context.js';
import type { WebhookSubscriptionTable } from '../db/types.js';
import { nowIso } from '../domain/shared/ids.js';
import { signingSecrets } from '../domain/webhooks/schema.js';
import { signatureHeader } from '../domain/webhooks/signing.js';
import { type ClaimedDelivery, claimDueDeliveries } from './claims.js';
import { fanOutOrg, orgsBehind } from './fan-out.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, type SendResult, WebhookSender } from './http-sender.js';
import { type DeliveryLogger, describeError, silentLogger } from './log.js';
import { type AttemptOutcome, recordOutcomes } from './outcomes.js';

export interface DispatcherOptions {
  /** Deadline of one delivery request (a 2xx within it is success). */
  requestTimeoutMs?: number;
  /** How long a claim is exclusive; must exceed the request timeout so a live worker never loses its claim. */
  leaseMs?: number;
  /** The polling backstop, for lost wake-ups, other processes' writes on SQLite, and due retries. */
  pollIntervalMs?: number;
  /** In-flight requests per subscription in this process: a slow subscriber ties up only its own slots. */
  perSubscriptionConcurrency?: number;
  /** In-flight requests in this process. */
  maxInFlight?: number;
  /** How long stop() lets requests in flight finish before interrupting them. */
  stopGraceMs?: number;
  workerId?: string;
  logger?: DeliveryLogger;
}

const FAN_OUT_BATCH = 500;
const ORG_SCAN_LIMIT = 1000;
const OUTCOME_BATCH = 500;
const FLUSH_RETRY_MS = 1000;

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

  private readonly inFlightBySub = new Map<string, number>();
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  private pumping: Promise<void> | null = null;
  private pumpAgain = false;

  private readonly outcomes: AttemptOutcome[] = [];
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly ctx: AppContext,
    options: DispatcherOptions = {},
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.leaseMs = options.leaseMs ?? this.requestTimeoutMs + 30_000;
    if (this.leaseMs <= this.requestTimeoutMs) throw new Error('The delivery lease must be longer than the request timeout.');
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.perSubscription = options.perSubscriptionConcurrency ?? 16;
    this.maxInFlight = options.maxInFlight ?? 256;
    this.stopGraceMs = options.stopGraceMs ?? 5000;
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.log = options.logger ?? silentLogger;
    this.sender = new WebhookSender({ allowPrivateTargets: ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS, timeoutMs: this.requestTimeoutMs });
  }

  start(): void {
    if (this.started) return;
    this.started = true;
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
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    await this.pumping;
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
    await this.sender.close();
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
      this.pumpAgain = false;
      try {
        await this.fanOut();
        await this.claimAndSend();
      } catch (err) {
        // A database hiccup: the poll tries again; nothing is lost because nothing was acknowledged.
        this.log.error(describeError(err), 'webhook dispatcher round failed');
        return;
      }
    } while (this.pumpAgain && !this.stopped);
  }

  private async fanOut(): Promise<void> {
    const orgs = new Set(this.pendingOrgs);
    this.pendingOrgs.clear();
    if (this.scanAllOrgs) {
      this.scanAllOrgs = false;
      for (const id of await orgsBehind(this.ctx, ORG_SCAN_LIMIT)) orgs.add(id);
    }
    for (const orgId of orgs) {
      if (this.stopped) return;
      const { subscriptionIds, more } = await fanOutOrg(this.ctx, orgId, FAN_OUT_BATCH);
      for (const id of subscriptionIds) this.dirtySubs.add(id);
      if (more) {
        this.pendingOrgs.add(orgId);
        this.pumpAgain = true;
      }
    }
  }

  private async candidateSubscriptions(): Promise<WebhookSubscriptionTable[]> {
    const query = this.ctx.db.db.selectFrom('webhook_subscriptions').selectAll().where('status', '=', 'active');
    if (this.allSubsDirty) {
      this.allSubsDirty = false;
      this.dirtySubs.clear();
      return query.execute();
    }
    if (this.dirtySubs.size === 0) return [];
    const ids = [...this.dirtySubs];
    this.dirtySubs.clear();
    return query.where('id', 'in', ids).execute();
  }

  private async claimAndSend(): Promise<void> {
    const subs = await this.candidateSubscriptions();
    for (const sub of subs) {
      const globalRoom = this.maxInFlight - this.inFlight;
      if (this.stopped || globalRoom <= 0) {
        // Out of global capacity: try this one again when any request finishes.
        this.dirtySubs.add(sub.id);
        continue;
      }
      const room = Math.min(this.perSubscription - (this.inFlightBySub.get(sub.id) ?? 0), globalRoom);
      if (room <= 0) continue; // its own requests finishing will mark it dirty again
      const claimed = await claimDueDeliveries(this.ctx, sub.id, room, this.workerId, this.leaseMs);
      for (const delivery of claimed) void this.deliver(sub, delivery);
    }
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
    this.outcomes.push({ delivery, startedAt, result, interrupted: this.interrupt.signal.aborted && result.error === 'interrupted: worker stopping' });
    this.inFlight--;
    const left = (this.inFlightBySub.get(sub.id) ?? 1) - 1;
    if (left === 0) this.inFlightBySub.delete(sub.id);
    else this.inFlightBySub.set(sub.id, left);
    this.dirtySubs.add(sub.id);
    this.flush();
    if (this.inFlight === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
    this.wake();
  }

  /** Writes finished attempts in batches: one transaction for everything that finished meanwhile. */
  private flush(): void {
    if (this.flushing) return;
    this.flushing = (async () => {
      while (this.outcomes.length > 0) {
        const batch = this.outcomes.splice(0, OUTCOME_BATCH);
        try {
          const effects = await recordOutcomes(this.ctx, batch, this.workerId);
          for (const { subscriptionId, delayMs } of effects.retries) this.scheduleRetryWake(subscriptionId, delayMs);
          for (const id of effects.disabledSubscriptions) this.log.warn({ subscriptionId: id }, 'webhook subscription disabled');
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
