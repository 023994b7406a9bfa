import cluster, { type Worker } from 'node:cluster';
import { pino } from 'pino';
import { type Config, ConfigError } from '../config.js';
import { loggerOptions } from '../observability/log-format.js';
import { MAX_PROCESSES, type ProcessRole } from '../roles.js';
import { UsageError } from './command.js';
import { migrationsSummary } from '../db/migrate.js';

/**
 * `serve --processes N`: the command's process becomes a supervisor (a node:cluster primary) that runs N processes
 * of one role on one port. The port is bound by the supervisor and its connections handed to the processes in
 * turn, since Node.js offers no SO_REUSEPORT for separate processes. Each process re-runs the same command line
 * and starts like a single `serve`; the supervisor restarts one that dies and passes signals on.
 */

/** What a process tells its supervisor once it listens: its start-up succeeded, so a later death is a crash. */
const LISTENING = 'emergency-api:listening';

interface ListeningMessage {
  type: typeof LISTENING;
  port: number;
}

const isListening = (message: unknown): message is ListeningMessage =>
  typeof message === 'object' && message !== null && (message as ListeningMessage).type === LISTENING;

/** The first restart of a process waits this long; each further quick death doubles the pause, up to the cap. */
const RESTART_BACKOFF_MS = 500;
const RESTART_BACKOFF_CAP_MS = 30_000;
/** A process that ran at least this long died of something new: its replacement waits the first pause again. */
const QUICK_DEATH_MS = 60_000;
/** A process ends itself when its shutdown outlasts the timeout; the supervisor kills one that could not (a blocked event loop). */
const FORCE_KILL_GRACE_MS = 2000;

/** The number of processes: `--processes` when given, else PROCESSES; checked before anything is opened. */
export function processCount(option: string | boolean | undefined, config: Config): number {
  const n = option === undefined ? config.PROCESSES : typeof option === 'string' && /^\s*\d+\s*$/.test(option) ? Number(option) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_PROCESSES) throw new UsageError(`--processes must be a whole number from 1 to ${MAX_PROCESSES}`);
  // A supervised process's METRICS_PORT is already its own (the supervisor checked the range).
  const metricsBase = cluster.isWorker ? undefined : config.METRICS_PORT;
  if (n > 1 && metricsBase !== undefined && metricsBase > 0 && metricsBase + n - 1 > 65535) {
    throw new ConfigError(
      `Invalid configuration:\n  METRICS_PORT: process i of ${n} listens on METRICS_PORT + i, beyond 65535: choose METRICS_PORT=${65536 - n} or below`,
    );
  }
  return n;
}

/** True in a process a `serve --processes N` supervisor started. */
export const isSupervisedProcess = (): boolean => cluster.isWorker;

/** Tells the supervisor, if there is one, that this process listens on `port`. */
export function reportListening(port: number): void {
  if (cluster.isWorker) process.send?.({ type: LISTENING, port } satisfies ListeningMessage);
}

export interface SupervisorOptions {
  role: ProcessRole;
  processes: number;
  config: Config;
  /** How long a process's own shutdown may take (it exits by itself then). */
  shutdownTimeoutMs: number;
  /** The migrations the supervisor applied before forking, to be logged. */
  applied: string[];
}

/** One of the N places: its current process, and how quickly its processes have been dying. */
interface Slot {
  index: number;
  worker: Worker | null;
  forkedAt: number;
  /** A process of this slot has listened: a later death is restarted, whereas a first start that fails stops them all. */
  listened: boolean;
  quickDeaths: number;
  restart: NodeJS.Timeout | null;
}

/**
 * Forks the processes and watches them until SIGTERM or SIGINT, which it passes on; it exits once they all exited.
 * Process i listens on METRICS_PORT + i (when METRICS_PORT is set and not 0), so that each is scraped on its own.
 * The database was checked and migrated before: the processes do not race to apply migrations.
 */
export function superviseProcesses({ role, processes, config, shutdownTimeoutMs, applied }: SupervisorOptions): void {
  const metricsBase = config.METRICS_PORT;
  const logger = pino({ name: 'supervisor', ...loggerOptions(config) });
  if (applied.length > 0) logger.info({ migrations: applied }, migrationsSummary(applied));
  const slots: Slot[] = Array.from({ length: processes }, (_, index) => ({
    index,
    worker: null,
    forkedAt: 0,
    listened: false,
    quickDeaths: 0,
    restart: null,
  }));
  // With PORT=0 every process gets the one port the supervisor bound (known once the first process listens).
  let port = config.PORT;
  let everyoneListened = false;
  let stopping = false;
  let exitCode = 0;

  const finishIfDone = () => {
    if (!stopping || slots.some((slot) => slot.worker !== null)) return;
    logger.info({ role, exitCode }, 'every process stopped');
    process.exit(exitCode);
  };

  const stopAll = (signal: NodeJS.Signals, code: number) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    for (const slot of slots) {
      if (slot.restart) clearTimeout(slot.restart);
      slot.restart = null;
      slot.worker?.process.kill(signal);
    }
    const force = setTimeout(() => {
      const left = slots.flatMap((slot) => (slot.worker ? [slot.worker] : []));
      for (const worker of left) worker.process.kill('SIGKILL');
      logger.error({ processPids: left.map((worker) => worker.process.pid) }, 'processes still running after the shutdown timeout were killed');
      process.exit(exitCode || 1);
    }, shutdownTimeoutMs + FORCE_KILL_GRACE_MS);
    force.unref();
    finishIfDone();
  };

  const exited = (slot: Slot, worker: Worker, code: number | null, signal: string | null) => {
    if (slot.worker === worker) slot.worker = null;
    const pid = worker.process.pid;
    if (stopping) return finishIfDone();
    const how = signal ? `signal ${signal}` : `code ${code}`;
    if (!slot.listened) {
      // A start-up failure: the process printed what to change, and the others would fail the same way.
      logger.error({ processPid: pid, processIndex: slot.index, code, signal }, `process ${pid} exited (${how}) before it listened; stopping the others`);
      return stopAll('SIGTERM', code || 1);
    }
    const quick = Date.now() - slot.forkedAt < QUICK_DEATH_MS;
    const delay = quick ? Math.min(RESTART_BACKOFF_CAP_MS, RESTART_BACKOFF_MS * 2 ** slot.quickDeaths) : RESTART_BACKOFF_MS;
    slot.quickDeaths = quick ? slot.quickDeaths + 1 : 0;
    logger.error(
      { processPid: pid, processIndex: slot.index, code, signal, restartInMs: delay },
      `process ${pid} exited (${how}); a replacement starts in ${delay} ms`,
    );
    slot.restart = setTimeout(() => {
      const replacement = fork(slot);
      logger.info(
        { processPid: replacement.process.pid, processIndex: slot.index, replaces: pid },
        `process ${replacement.process.pid} forked to replace ${pid}`,
      );
    }, delay);
  };

  const fork = (slot: Slot): Worker => {
    slot.restart = null;
    slot.forkedAt = Date.now();
    const worker = cluster.fork(metricsBase !== undefined && metricsBase > 0 ? { METRICS_PORT: String(metricsBase + slot.index) } : {});
    slot.worker = worker;
    worker.on('message', (message: unknown) => {
      if (!isListening(message)) return;
      slot.listened = true;
      if (port === 0) port = message.port;
      if (!everyoneListened && slots.every((s) => s.listened)) {
        everyoneListened = true;
        const pids = slots.map((s) => s.worker?.process.pid);
        logger.info({ role, processes, port, processPids: pids }, `${processes} processes of role ${role} share port ${port}`);
      }
    });
    worker.on('error', (err) => logger.error({ processPid: worker.process.pid, err: err.message }, 'the channel to a process failed'));
    worker.on('exit', (code, signal) => exited(slot, worker, code, signal));
    return worker;
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    logger.info({ signal }, `shutting down: ${signal} passed on to every process`);
    stopAll(signal, 0);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  logger.info({ role, processes }, `starting ${processes} processes of role ${role}`);
  for (const slot of slots) fork(slot);
}
