import { capCommands } from './admin-cap.js';
import { drillCommands } from './admin-drills.js';
import { integrationCommands } from './admin-integrations.js';
import { deviceCommands } from './admin-devices.js';
import { directoryCommands } from './admin-directory.js';
import { keyCommands } from './admin-keys.js';
import { quotaCommands } from './admin-quotas.js';
import type { CliCommand } from './command.js';
import { serveCommands } from './serve.js';
import { webhookCommands } from './admin-webhooks.js';
import { webhookListenCommands } from './webhook-listen.js';
import { workerCommands } from './worker.js';

/** Every command of the `emergency-api` executable, by its words. */
export const commands: Record<string, CliCommand> = {
  ...serveCommands,
  ...directoryCommands,
  ...quotaCommands,
  ...keyCommands,
  ...deviceCommands,
  ...webhookCommands,
  ...capCommands,
  ...drillCommands,
  ...integrationCommands,
  ...webhookListenCommands,
  ...workerCommands,
};
