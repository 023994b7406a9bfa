import type { Config } from './config.js';
import type { AppContext } from './context.js';
import { openDatabase } from './db/connect.js';
import { attachmentStoreFromConfig } from './domain/attachments/store-from-config.js';
import { deviceAckLags, unacknowledgedDevices } from './domain/devices/receipt-gauges.js';
import { EventBus } from './domain/events/bus.js';
import { Metrics } from './observability/metrics.js';
import { OutageLog } from './observability/outage-log.js';

/**
 * The context every service runs in. Apart from the HTTP application (src/app.ts), so that a CLI
 * command that only needs the database does not load the web stack.
 */
export function createContext(config: Config): AppContext {
  const db = openDatabase(config.DATABASE_URL, {
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
  });
  const bus = new EventBus();
  // Every commit that advanced an org's stream wakes that stream's readers in this process.
  db.onCommitted((event) => bus.committed(event));
  const metrics = new Metrics();
  metrics.readReceiptsWith({ ackLags: () => deviceAckLags(db.db), unacknowledged: () => unacknowledgedDevices(db.db) });
  return {
    db,
    config,
    bus,
    dbOutage: new OutageLog('the database'),
    metrics,
    attachments: attachmentStoreFromConfig(config),
  };
}
