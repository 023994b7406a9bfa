import type { Config } from './config.js';
import type { DbHandle } from './db/connect.js';
import type { AttachmentStore } from './domain/attachments/store.js';
import type { EventBus } from './domain/events/bus.js';

/** What every service needs: the database, the configuration, the committed-event wake-up and the media store. */
export interface AppContext {
  db: DbHandle;
  config: Config;
  bus: EventBus;
  /** Where inline attachment bytes are kept (ATTACHMENT_STORE); replaceable, e.g. by a failing store in tests. */
  attachments: AttachmentStore;
}
