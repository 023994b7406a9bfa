import type { Config } from './config.js';
import type { DbHandle } from './db/connect.js';
import type { EventBus } from './domain/events/bus.js';
import type { Metrics } from './observability/metrics.js';

/** What every service needs: the database, the configuration, the committed-event wake-up and the metrics. */
export interface AppContext {
  db: DbHandle;
  config: Config;
  bus: EventBus;
  metrics: Metrics;
}
