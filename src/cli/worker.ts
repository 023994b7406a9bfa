import { pino } from 'pino';
import { loggerOptions } from '../observability/log-format.js';
import { createContext } from '../create-context.js';
import { loadConfig } from '../config.js';
import type { FailureReport } from '../db/connect.js';
import { migrateToLatest } from '../db/migrate.js';
import { startPgEventListener } from '../db/postgres/listener.js';
import { describeError } from '../observability/describe-error.js';
import type { CliCommand } from './command.js';
import { UsageError } from './command.js';

const SHUTDOWN_TIMEOUT_MS = 20_000;

function seconds(value: string | boolean | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${flag} must be a positive number of seconds`);
  return n * 1000;
}

export const workerCommands: Record<string, CliCommand> = {
  worker: {
    summary: 'run the webhook delivery worker alone (no HTTP server)',
    options: {
      'lease-seconds': { type: 'string', value: 'S', description: "how long a claimed delivery stays this worker's (default 2 × the timeout + 15 s)" },
      'timeout-seconds': { type: 'string', value: 'S', description: 'time limit of one delivery attempt (default WEBHOOK_TIMEOUT_SECONDS)' },
      'poll-seconds': { type: 'string', value: 'S', description: 'how often it looks for due deliveries (default 1)' },
    },
    json: 'print {"status","workerId"} on stdout once it runs; logs are JSON lines on stderr',
    details: ['Runs until SIGTERM or SIGINT; several workers may run against one database.'],
    standalone: true,
    run: async ({ values }) => {
      const options = {
        leaseMs: seconds(values['lease-seconds'], 'lease-seconds'),
        requestTimeoutMs: seconds(values['timeout-seconds'], 'timeout-seconds'),
        pollIntervalMs: seconds(values['poll-seconds'], 'poll-seconds'),
      };
      const config = loadConfig();
      const ctx = createContext(config);
      await migrateToLatest(ctx.db);
      const logOptions = { name: 'webhook-worker', ...loggerOptions(config, process.stderr) };
      // Logs go to stderr: readable on a terminal, JSON otherwise.
      const logger = logOptions.transport ? pino(logOptions) : pino(logOptions, pino.destination(2));
      const reportFailure: FailureReport = (err, consequence) => logger.error(describeError(err), consequence);
      ctx.db.reportFailures(reportFailure);
      ctx.dbOutage.attach(logger);
      // The delivery machinery is loaded by this command only.
      const { Dispatcher } = await import('../delivery/dispatcher.js');
      const dispatcher = new Dispatcher(ctx, { ...options, logger });
      // On PostgreSQL, NOTIFYs from the instances that write events wake this worker at once.
      const stopListener = startPgEventListener(ctx.db, (event) => ctx.eventLog.committed(event), reportFailure);
      dispatcher.start();
      logger.info({ workerId: dispatcher.workerId, database: ctx.db.describe }, 'webhook worker started');
      const shutdown = async (signal: string) => {
        logger.info({ signal }, 'webhook worker stopping');
        const timer = setTimeout(() => process.exit(1), SHUTDOWN_TIMEOUT_MS);
        timer.unref();
        await dispatcher.stop();
        await stopListener();
        await ctx.db.close();
        process.exit(0);
      };
      process.once('SIGTERM', () => void shutdown('SIGTERM'));
      process.once('SIGINT', () => void shutdown('SIGINT'));
      return { status: 'running', workerId: dispatcher.workerId };
    },
  },
};
