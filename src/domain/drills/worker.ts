import { setImmediate as nextTurn } from 'node:timers/promises';
import type { AppContext } from '../../context.js';
import { isDatabaseUnavailable } from '../../db/unavailable.js';
import { describeError } from '../../observability/describe-error.js';
import { soonestDrillRun, soonestResolve } from './repo.js';
import { claimDueDrills, completeDueRuns, startRun, startStranded } from './runs.js';

/** The logging the worker needs; a pino logger satisfies it. */
export interface DrillLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface DrillWorkerOptions {
  /** How often due drills, stranded runs and due completions are looked for; one due sooner gets a timer of its own. */
  pollIntervalMs: number;
}

export const defaultDrillWorkerOptions: DrillWorkerOptions = { pollIntervalMs: 1_000 };

/**
 * Runs drills as their times come: the timers are the drills' next run times and the runs' resolve times in the database,
 * and this worker only polls for them. Every instance runs one; compare-and-set claims keep each step to one of them, and
 * what a process killed mid-way left (a run claimed and not declared, a resolve due) is taken up at the next pass of any.
 */
export class DrillWorker {
  private readonly options: DrillWorkerOptions;
  private timer: NodeJS.Timeout | undefined;
  private soon: NodeJS.Timeout | undefined;
  private passing: Promise<void> | null = null;
  private passAgain = false;
  private stopped = false;

  constructor(
    private readonly ctx: AppContext,
    private readonly log: DrillLogger,
    options: Partial<DrillWorkerOptions> = {},
  ) {
    this.options = { ...defaultDrillWorkerOptions, ...options };
  }

  start(): void {
    this.timer = setInterval(() => this.pass(), this.options.pollIntervalMs);
    this.timer.unref();
    this.pass();
  }

  /** Stops polling and waits for the pass under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.soon);
    await this.passing;
  }

  private pass(): void {
    if (this.stopped) return;
    if (this.passing) {
      this.passAgain = true;
      return;
    }
    this.passing = this.work()
      .catch((err) => this.failed(err))
      .finally(() => {
        this.passing = null;
        if (this.passAgain) {
          this.passAgain = false;
          this.pass();
        }
      });
  }

  private async work(): Promise<void> {
    for (let more = true; more && !this.stopped; ) {
      const claim = await claimDueDrills(this.ctx.db);
      for (const skipped of claim.skipped) this.log.info(skipped, 'drill occurrence missed by more than an hour: skipped');
      for (const run of claim.claimed) {
        await startRun(this.ctx, run);
        this.log.info({ drillId: run.drill_id, runId: run.id, scheduledFor: run.scheduled_for }, 'drill run started');
      }
      more = claim.more;
      if (more) await nextTurn();
    }
    // Claimed by a process that died before declaring (a run being declared right now is found declared).
    await startStranded(this.ctx);
    for (let more = true; more && !this.stopped; ) {
      const done = await completeDueRuns(this.ctx.db, Date.now(), undefined, this.ctx.config.SANDBOX);
      for (const report of done.completed) {
        this.log.info({ drillId: report.drillId, runId: report.runId, passed: report.passed }, 'drill run completed');
      }
      more = done.more;
      if (more) await nextTurn();
    }
    await this.timeNext();
  }

  /** A drill or a resolve due before the next poll is acted on on time by a timer of its own. */
  private async timeNext(): Promise<void> {
    const times = [await soonestDrillRun(this.ctx.db.db), await soonestResolve(this.ctx.db.db)].filter((t): t is string => t !== null);
    clearTimeout(this.soon);
    if (times.length === 0 || this.stopped) return;
    const wait = Math.min(...times.map(Date.parse)) - Date.now();
    if (wait >= this.options.pollIntervalMs) return;
    this.soon = setTimeout(() => this.pass(), Math.max(0, wait) + 1);
    this.soon.unref();
  }

  private failed(err: unknown): void {
    // An outage is logged once for its whole length, not once a poll.
    if (isDatabaseUnavailable(err)) this.ctx.dbOutage.failed(err);
    else this.log.error(describeError(err), 'running drills failed; the next poll retries');
  }
}

/** Builds the worker and starts it: the shape startServer's background parts use. */
export function startDrillWorker(ctx: AppContext, log: DrillLogger, options: Partial<DrillWorkerOptions> = {}): { stop(): Promise<void> } {
  const worker = new DrillWorker(ctx, log, options);
  worker.start();
  return worker;
}
