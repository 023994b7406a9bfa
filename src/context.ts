import type { Config } from './config.js';
import type { DbHandle } from './db/connect.js';
import type { AttachmentStore } from './domain/attachments/store.js';
import type { EventLog } from './log/follow.js';
import type { WebhookTransport } from './domain/webhooks/transport.js';
import type { Metrics } from './observability/metrics.js';
import type { OutageLog } from './observability/outage-log.js';
import type { Offload } from './offload/pool.js';

/** What every service needs: the database, the configuration, the committed-event wake-up, the metrics and the media store. */
export interface AppContext {
  db: DbHandle;
  config: Config;
  /** The org event logs' followers in this process, and the wake-up of each commit. */
  eventLog: EventLog;
  metrics: Metrics;
  /** Where inline attachment bytes are kept (ATTACHMENT_STORE); replaceable, e.g. by a failing store in tests. */
  attachments: AttachmentStore;
  /** Database failures that mean "unavailable": logged once per outage by every part of the process. */
  dbOutage: OutageLog;
  /** Sends a webhook request at once (the admin test ping). */
  webhookTransport: WebhookTransport;
  /** Worker threads for the CPU-heavy part of requests, so that none holds the event loop. */
  offload: Offload;
}
