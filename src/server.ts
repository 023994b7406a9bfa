import type { FastifyInstance } from 'fastify';
import { type AppOptions, buildApp, createContext } from './app.js';
import type { Config } from './config.js';
import type { EventLogOptions } from './log/follow.js';
import type { AppContext } from './context.js';
import type { FailureReport } from './db/connect.js';
import { migrateToLatest } from './db/migrate.js';
import { describeError } from './observability/describe-error.js';
import { startMetricsListener } from './http/metrics-endpoint.js';
import { sweepExpiredAnswers } from './db/idempotency.js';
import { pruneExpiredEvents } from './log/retention.js';
import { pruneExpiredTokens } from './domain/oauth/grants.js';
import { startPgEventListener } from './db/postgres/listener.js';
import { type DeviceGatewayOptions, startDeviceGateway } from './devices/gateway.js';
import { type DispatcherOptions, startDispatcher } from './delivery/dispatcher.js';
import { type DeadlineWorkerOptions, startDeadlineWorker } from './domain/deadlines/worker.js';
import { type DrillWorkerOptions, startDrillWorker } from './domain/drills/worker.js';
import { type ProcessRole, ROLE_PARTS } from './roles.js';

export interface RunningServer {
  app: FastifyInstance;
  ctx: AppContext;
  /** Base URL of the listening server, e.g. http://127.0.0.1:8080 */
  url: string;
  /** Base URL of the metrics listener (METRICS_PORT), when one is configured. */
  metricsUrl?: string;
  stop(): Promise<void>;
}

const ANSWER_SWEEP_MS = 15 * 60 * 1000;
const EVENT_SWEEP_MS = 60 * 60 * 1000;

/** Runs a housekeeping task on an interval; a failure is reported and the next run retries. */
function startSweeper(task: () => Promise<unknown>, intervalMs: number, report: FailureReport, failure: string): () => Promise<void> {
  const timer = setInterval(() => {
    task().catch((err: Error) => report(err, failure));
  }, intervalMs);
  timer.unref();
  return async () => clearInterval(timer);
}

/** Internal knobs (not configuration): tests shorten timings with them. */
export interface ServerOptions {
  devices?: Partial<DeviceGatewayOptions>;
  /** How the event log is followed here: page size, backstop poll (tests change them). */
  eventLog?: Partial<EventLogOptions>;
  /** Webhook dispatcher tuning (tests shorten its timeouts); false runs the server without it. */
  dispatcher?: DispatcherOptions | false;
  /** Event stream timings (tests shorten the stall timeout, say). */
  streams?: AppOptions['streams'];
  /** Acknowledgement-deadline worker timings; false runs the server without it. */
  deadlines?: Partial<DeadlineWorkerOptions> | false;
  /** Drill worker timings; false runs the server without it. */
  drills?: Partial<DrillWorkerOptions> | false;
  /** The role of this process (src/roles.ts); ROLE of the configuration by default. */
  role?: ProcessRole;
}

/**
 * Starts what `serve` runs in one process: migrations, then the HTTP server (REST, tool server, device
 * gateway) and the background workers, or the share of them its role names (src/roles.ts). Every role
 * listens on PORT, at least for /healthz and /readyz. `stop` shuts them down in reverse order.
 */
export async function startServer(config: Config, existing?: AppContext, options: ServerOptions = {}): Promise<RunningServer> {
  const ctx = existing ?? createContext(config, { eventLog: options.eventLog });
  await migrateToLatest(ctx.db);
  const role = options.role ?? config.ROLE;
  const parts = ROLE_PARTS[role];
  const app = await buildApp(ctx, { streams: options.streams, parts });
  const reportFailure: FailureReport = (err, consequence) => app.log.error(describeError(err), consequence);
  ctx.db.reportFailures(reportFailure);
  ctx.db.offloadCheckpoints?.();
  // Background parts started with the server; each returns its stop function.
  const stoppers: (() => Promise<void>)[] = [];
  // Wake-ups from the other processes of the fleet: for device sockets and streams, webhook delivery and deadlines.
  if (parts.deviceGateway || parts.eventStreams || parts.webhookDelivery || parts.deadlines) {
    stoppers.push(startPgEventListener(ctx.db, (event) => ctx.eventLog.committed(event), reportFailure));
  }
  if (parts.deviceGateway) {
    const gateway = startDeviceGateway(ctx, app.server, app.log, options.devices, {
      authFailures: app.services.authFailures,
      addresses: app.services.addresses,
      intake: app.services.intake,
      connections: app.services.connections,
      tenants: app.services.tenants,
    });
    stoppers.push(() => gateway.stop());
  }
  // WEBHOOK_DELIVERY_IN_SERVE=false leaves delivery of role `all` to separate `worker` processes (or `serve --role worker`).
  const delivers = parts.webhookDelivery && (role === 'worker' || config.WEBHOOK_DELIVERY_IN_SERVE);
  if (options.dispatcher !== false && delivers) stoppers.push(startDispatcher(ctx, { logger: app.log, ...options.dispatcher }).stop);
  // Every process with this part acts on acknowledgement deadlines; claims in the database keep each to one of them.
  if (parts.deadlines && options.deadlines !== false) {
    const deadlines = startDeadlineWorker(ctx, app.log, options.deadlines);
    stoppers.push(() => deadlines.stop());
  }
  // Drills are timers in the database too, run by the same processes; compare-and-set claims keep each run to one of them.
  if (parts.deadlines && options.drills !== false) {
    const drills = startDrillWorker(ctx, app.log, options.drills);
    stoppers.push(() => drills.stop());
  }
  // Expired Idempotency-Key answers (kept 24 h) and events past EVENT_RETENTION_DAYS.
  if (parts.sweeps) {
    stoppers.push(
      startSweeper(
        () => sweepExpiredAnswers(ctx.db.db),
        ANSWER_SWEEP_MS,
        reportFailure,
        'sweeping expired Idempotency-Key answers failed; the next sweep retries',
      ),
    );
    stoppers.push(
      startSweeper(
        () => pruneExpiredEvents(ctx.db, config.EVENT_RETENTION_DAYS),
        EVENT_SWEEP_MS,
        reportFailure,
        'pruning expired events failed; the next sweep retries',
      ),
    );
    stoppers.push(startSweeper(() => pruneExpiredTokens(ctx), ANSWER_SWEEP_MS, reportFailure, 'pruning expired OAuth tokens failed; the next sweep retries'));
  }
  const abandon = async (err: unknown): Promise<never> => {
    await app.close();
    for (const stopper of stoppers.reverse()) await stopper();
    if (!existing) await ctx.db.close();
    throw err;
  };
  await app.listen({ port: config.PORT, host: config.HOST }).catch(abandon);
  // A metrics port that cannot be bound stops the start like the API port would; the error says which listener
  // failed, so that the start-up message names METRICS_PORT rather than PORT.
  const metrics = await startMetricsListener(ctx).catch((err: Error) =>
    abandon(Object.assign(new Error(`the metrics listener could not start: ${err.message}`, { cause: err }), { name: 'MetricsListenerError' })),
  );
  if (metrics) stoppers.push(() => metrics.stop());
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const host = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  let stopped = false;
  return {
    app,
    ctx,
    url: `http://${host}:${port}`,
    ...(metrics ? { metricsUrl: metrics.url } : {}),
    async stop() {
      if (stopped) return;
      stopped = true;
      // Stop accepting at once (in-flight requests finish; new ones get 503) while device sockets are
      // closed with a reconnect hint and claimed webhook deliveries are handed back.
      const closing = app.close();
      for (const stopper of stoppers.reverse()) await stopper();
      await closing;
      if (!existing) await Promise.all([ctx.db.close(), ctx.offload.close()]);
    },
  };
}
