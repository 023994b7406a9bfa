import type { Config } from './config.js';
import type { DbHandle } from './db/connect.js';
import type { EventBus } from './domain/events/bus.js';

/** What every service needs: the database, the configuration and the committed-event wake-up. */
export interface AppContext {
  db: DbHandle;
  config: Config;
  bus: EventBus;
}
