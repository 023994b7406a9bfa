import { setImmediate as nextTurn } from 'node:timers/promises';
import type { AppContext } from '../../context.js';
import { isDatabaseUnavailable } from '../../db/unavailable.js';
import { nextPendingDeadline, pruneSettledDeadlines } from './repo.js';
import { completeMarkedDeadlines, expireEndedWatches, fireDueDeadlines, type SettledDeadline } from './service.js';
import { describeError } from '../../observability/describe-error.js';

/** The logging the worker needs; a pino logger satisfies it. */
export interface DeadlineLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface DeadlineWorkerOptions {
  /** How often the soonest pending deadline is looked up; one due sooner than the next look gets a timer of its own. */
  pollIntervalMs: number;
  /** How often overdue deadlines marked by an acknowledgement are looked at, and watches that ended are closed. */
  completionCheckMs: number;
  /** How often settled deadlines past the event retention are removed. */
  pruneIntervalMs: number;
  /** How long after its deadline an overdue event is watched for completion; ACK_WATCH_HOURS unless given (tests shorten it). */
  watchMs?: number;
}

export const defaultDeadlineWorkerOptions: DeadlineWorkerOptions = { pollIntervalMs: 1_000, completionCheckMs: 500, pruneIntervalMs: 3600_000 };

/**
 * Acts on acknowledgement deadlines as they come due: the deadlines live in the database (written with
 * their events), and this worker only polls for them. Every instance runs one; claims keep each
 * deadline to one of them. A deadline left pending by a process that died fires at the next poll of
 * any instance, so within a second or two of a restart.
 *
 * The work comes in small claims with a turn of the event loop between them, so thousands of deadlines
 * falling due together never hold the loop or the database for other tenants. Overdue events are looked
 * at again only when an acknowledgement marked them, and their watch ends a set time after the deadline.
 */
export class DeadlineWorker {
  private readonly options: DeadlineWorkerOptions;
  private readonly watchMs: number;
  private readonly timers: NodeJS.Timeout[] = [];
  /** The timer of a deadline due before the next poll. */
  private soon: NodeJS.Timeout | undefined;
  private firing: Promise<void> | null = null;
  private fireAgain = false;
  private completing: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly ctx: AppContext,
    private readonly log: DeadlineLogger,
    options: Partial<DeadlineWorkerOptions> = {},
  ) {
    this.options = { ...defaultDeadlineWorkerOptions, ...options };
    this.watchMs = this.options.watchMs ?? ctx.config.ACK_WATCH_HOURS * 3_600_000;
  }

  start(): void {
    const every = (ms: number, fn: () => void) => {
      const timer = setInterval(fn, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(this.options.pollIntervalMs, () => this.fire());
    every(this.options.completionCheckMs, () => this.complete());
    every(this.options.pruneIntervalMs, () => this.prune());
    this.fire();
  }

  /** Stops polling and waits for the work under way (a claim commits or rolls back, never half). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    clearTimeout(this.soon);
    await Promise.all([this.firing, this.completing]);
  }

  private fire(): void {
    if (this.stopped) return;
    if (this.firing) {
      this.fireAgain = true;
      return;
    }
    this.firing = this.fireDue()
      .catch((err) => this.failed(err, 'firing acknowledgement deadlines failed; the next poll retries'))
      .finally(() => {
        this.firing = null;
        if (this.fireAgain) {
          this.fireAgain = false;
          this.fire();
        }
      });
  }

  private async fireDue(): Promise<void> {
    let next = await nextPendingDeadline(this.ctx.db.db);
    if (next !== null && Date.parse(next) <= Date.now()) {
      for (let more = true; more && !this.stopped; ) {
        const fired = await fireDueDeadlines(this.ctx.db, Date.now(), undefined, this.ctx.config.SANDBOX);
        this.observe(fired.settled);
        more = fired.more;
        if (more) await nextTurn();
      }
      next = await nextPendingDeadline(this.ctx.db.db);
    }
    this.timeNext(next);
  }

  /** A deadline due before the next poll is fired on time by a timer of its own (one per worker, not per deadline). */
  private timeNext(next: string | null): void {
    clearTimeout(this.soon);
    if (next === null || this.stopped) return;
    const wait = Date.parse(next) - Date.now();
    if (wait >= this.options.pollIntervalMs) return;
    this.soon = setTimeout(() => this.fire(), Math.max(0, wait) + 1);
    this.soon.unref();
  }

  private complete(): void {
    if (this.completing || this.stopped) return;
    this.completing = this.completeMarked()
      .catch((err) => this.failed(err, 'checking overdue deliveries failed; the next check retries'))
      .finally(() => {
        this.completing = null;
      });
  }

  /** Marked overdue deadlines, then watches that ended, each in small claims with a turn of the loop between them. */
  private async completeMarked(): Promise<void> {
    for (let more = true; more && !this.stopped; ) {
      const done = await completeMarkedDeadlines(this.ctx.db, this.watchMs, Date.now(), undefined, this.ctx.config.SANDBOX);
      if (done.examined > 0) this.ctx.metrics.deliveryWatchChecks.inc(done.examined);
      this.observe(done.settled);
      more = done.more;
      if (more) await nextTurn();
    }
    for (let more = true; more && !this.stopped; ) {
      const ended = await expireEndedWatches(this.ctx.db, this.watchMs);
      this.observe(ended.settled);
      more = ended.more;
      if (more) await nextTurn();
    }
  }

  private prune(): void {
    const before = new Date(Date.now() - this.ctx.config.EVENT_RETENTION_DAYS * 86_400_000).toISOString();
    pruneSettledDeadlines(this.ctx.db.db, before).catch((err) => this.failed(err, 'pruning settled acknowledgement deadlines failed; the next sweep retries'));
  }

  private observe(settled: SettledDeadline[]): void {
    const { metrics } = this.ctx;
    for (const s of settled) {
      const labels = { event_type: s.eventType };
      if (s.outcome === 'overdue') metrics.deliveryOverdue.inc(labels);
      if (s.outcome === 'completed') metrics.deliveryCompleted.inc(labels);
      if (s.fullAckSeconds !== null) metrics.fullAcknowledgement.observe(s.fullAckSeconds);
    }
    const overdue = settled.filter((s) => s.outcome === 'overdue').length;
    const completed = settled.filter((s) => s.outcome === 'completed').length;
    if (overdue > 0 || completed > 0) this.log.info({ overdue, completed }, 'acknowledgement deadlines acted on');
  }

  private failed(err: unknown, consequence: string): void {
    // An outage is logged once for its whole length, not once a poll.
    if (isDatabaseUnavailable(err)) this.ctx.dbOutage.failed(err);
    else this.log.error(describeError(err), consequence);
  }
}

/** Builds the worker and starts it: the shape startServer's background parts use. */
export function startDeadlineWorker(ctx: AppContext, log: DeadlineLogger, options: Partial<DeadlineWorkerOptions> = {}): { stop(): Promise<void> } {
  const worker = new DeadlineWorker(ctx, log, options);
  worker.start();
  return worker;
}
