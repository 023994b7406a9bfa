import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { AppContext } from '../context.js';
import { DeliveryAttempts } from './attempts.js';
import { ClaimLoop } from './claim-loop.js';
import { DeliveryClaimer } from './claimer.js';
import { EventFanOut } from './fan-out.js';
import { InFlightScheduler } from './in-flight.js';
import { WorkerLiveness } from './liveness.js';
import { type DeliveryLogger, silentLogger } from './log.js';
import { OutcomeRecorder } from './outcomes.js';

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
  /**
   * In-flight requests in this process (default WEBHOOK_MAX_IN_FLIGHT). Subscriptions waiting for a slot
   * take turns; a subscription with none in flight may start one beyond it, so others' slow requests never
   * hold up its next delivery.
   */
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

interface Settings {
  workerId: string;
  requestTimeoutMs: number;
  leaseMs: number;
  pollIntervalMs: number;
  perSubscription: number;
  maxInFlight: number;
  claimBatch: number;
  stopGraceMs: number;
  log: DeliveryLogger;
}

function settingsOf(ctx: AppContext, options: DispatcherOptions): Settings {
  const requestTimeoutMs = options.requestTimeoutMs ?? ctx.config.WEBHOOK_TIMEOUT_SECONDS * 1000;
  const perSubscription = options.perSubscriptionConcurrency ?? ctx.config.WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION;
  const maxInFlight = options.maxInFlight ?? ctx.config.WEBHOOK_MAX_IN_FLIGHT;
  const claimBatch = options.claimBatch ?? ctx.config.WEBHOOK_CLAIM_BATCH;
  for (const [name, value] of [
    ['perSubscriptionConcurrency', perSubscription],
    ['maxInFlight', maxInFlight],
    ['claimBatch', claimBatch],
  ] as const) {
    if (!Number.isInteger(value) || value < 1) throw new Error(`The dispatcher's ${name} must be a positive integer.`);
  }
  // A claimed delivery may wait behind its subscription's earlier requests (claimBatch of them,
  // perSubscription at a time) or, as long, for a process-wide slot, before its own starts.
  const leaseMs = options.leaseMs ?? (1 + Math.max(1, Math.ceil(claimBatch / perSubscription))) * requestTimeoutMs + 15_000;
  if (leaseMs <= requestTimeoutMs) throw new Error('The delivery lease must be longer than the request timeout.');
  return {
    workerId: options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
    requestTimeoutMs,
    leaseMs,
    pollIntervalMs: options.pollIntervalMs ?? 1000,
    perSubscription,
    maxInFlight,
    claimBatch,
    stopGraceMs: options.stopGraceMs ?? 5000,
    log: options.logger ?? silentLogger,
  };
}

/**
 * The webhook delivery worker, composed of named parts: the fan-out of committed events into deliveries
 * (fan-out.ts), rounds of claims (claim-loop.ts, claimer.ts), the in-flight scheduler (in-flight.ts),
 * signed sends (attempts.ts), batched outcome records (outcomes.ts) and the worker's heartbeat (liveness.ts).
 * It wakes on the event bus and a periodic poll; the database (domain/webhooks/queue.ts) is always the source of truth.
 */
export class Dispatcher {
  readonly workerId: string;
  private readonly settings: Settings;
  private readonly stopping = new AbortController();
  private readonly liveness: WorkerLiveness;
  private readonly attempts: DeliveryAttempts;
  private readonly outcomes: OutcomeRecorder;
  private readonly scheduler: InFlightScheduler;
  private readonly loop: ClaimLoop;
  private started = false;
  /** Ends the wake-ups start() set up: the event-bus subscription and the poll. */
  private stopWakeUps: () => void = () => undefined;

  constructor(
    private readonly ctx: AppContext,
    options: DispatcherOptions = {},
  ) {
    const settings = settingsOf(ctx, options);
    const { workerId, log } = settings;
    const stopping = this.stopping.signal;
    this.settings = settings;
    this.workerId = workerId;
    this.liveness = new WorkerLiveness(ctx.db.db, workerId, settings.pollIntervalMs, stopping, log);
    this.attempts = new DeliveryAttempts(ctx, { timeoutMs: settings.requestTimeoutMs, perSubscription: settings.perSubscription }, log);
    this.scheduler = new InFlightScheduler({
      perSubscription: settings.perSubscription,
      maxInFlight: settings.maxInFlight,
      stopping,
      current: (id) => claimer.current(id),
      send: async (sub, delivery) => this.outcomes.add(await this.attempts.send(sub, delivery)),
      freed: (id) => this.loop.sendFinished(id),
    });
    const claimer = new DeliveryClaimer(settings, this.scheduler, stopping);
    this.loop = new ClaimLoop(
      ctx,
      { fanOut: new EventFanOut(ctx.db.db, stopping), claimer, scheduler: this.scheduler, liveness: this.liveness },
      settings,
      stopping,
      log,
    );
    this.outcomes = new OutcomeRecorder(ctx, workerId, stopping, log, {
      retryDue: (id, delayMs) => this.loop.retryDue(id, delayMs),
      disabled: (id) => claimer.forget(id),
    });
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.liveness.start();
    const unsubscribe = this.ctx.eventLog.onCommitted(({ orgId }) => {
      this.loop.committed(orgId);
    });
    const poll = setInterval(() => this.loop.poll(), this.settings.pollIntervalMs);
    // Deliberately not unref'd: it is what keeps a standalone worker process alive; stop() clears it.
    this.stopWakeUps = () => {
      unsubscribe();
      clearInterval(poll);
    };
    this.loop.wake();
  }

  /** Stops claiming, lets requests in flight finish (interrupting them after the grace period), records outcomes. */
  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    this.stopping.abort();
    this.stopWakeUps();
    this.liveness.stopBeating();
    await this.loop.stop();
    const grace = setTimeout(() => this.attempts.interrupt(), this.settings.stopGraceMs);
    await this.scheduler.whenIdle();
    clearTimeout(grace);
    await this.outcomes.drain();
    await this.liveness.retire();
    await this.attempts.close();
  }

  /** Requests in flight and deliveries claimed but not started, in this process. */
  stats(): { inFlight: number; buffered: number; held: number } {
    return this.scheduler.stats();
  }
}

/** Starts a dispatcher and returns its stop function (the shape startServer's background parts use). */
export function startDispatcher(ctx: AppContext, options: DispatcherOptions = {}): { dispatcher: Dispatcher; stop: () => Promise<void> } {
  const dispatcher = new Dispatcher(ctx, options);
  dispatcher.start();
  return { dispatcher, stop: () => dispatcher.stop() };
}
