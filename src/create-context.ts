import type { Config } from './config.js';
import type { AppContext } from './context.js';
import { openDatabase } from './db/connect.js';
import { attachmentStoreFromConfig } from './domain/attachments/store-from-config.js';
import { deviceAckLags, unacknowledgedDevices } from './domain/devices/receipt-gauges.js';
import { EventLog, type EventLogOptions } from './log/follow.js';
import { Metrics } from './observability/metrics.js';
import { OutageLog } from './observability/outage-log.js';
import { Offload } from './offload/pool.js';

/**
 * Kept apart from the HTTP application (src/app.ts) so that a CLI command needing only the database does not load the web stack.
 * `eventLog` tunes the followers' reads (tests shorten them); `createDatabase: false` refuses a missing SQLite file (DatabaseMissingError) rather than creating one the server does not use.
 */
export function createContext(config: Config, options: { createDatabase?: boolean; eventLog?: Partial<EventLogOptions> } = {}): AppContext {
  const timeouts = { statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS, connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS };
  const db = openDatabase(config.DATABASE_URL, timeouts, { create: options.createDatabase ?? true, poolSize: config.DB_POOL_SIZE });
  const metrics = new Metrics();
  const eventLog = new EventLog(db, { ...options.eventLog, onReplayRead: () => metrics.deviceReplayReads.inc() });
  // Every commit that advanced an org's stream wakes that stream's followers in this process.
  db.onCommitted((event) => eventLog.committed(event));
  metrics.readReceiptsWith({ ackLags: (limit) => deviceAckLags(db.db, limit), unacknowledged: (limit) => unacknowledgedDevices(db.db, limit) });
  const ctx: AppContext = {
    db,
    config,
    eventLog,
    dbOutage: new OutageLog('the database'),
    metrics,
    attachments: attachmentStoreFromConfig(config),
    offload: new Offload(config),
    // Loaded on first use: a CLI command that sends nothing does not load the HTTP client.
    webhookTransport: { sendNow: async (...args) => (await import('./delivery/send-now.js')).sendWebhookNow(ctx, ...args) },
  };
  return ctx;
}
