import type { Migration } from 'kysely';
import * as core from './0001_core.js';
import * as webhooks from './0003_webhooks.js';

/** Every migration, by name; names sort in the order they are applied. */
export const migrations: Record<string, Migration> = {
  '0001_core': core,
  '0003_webhooks': webhooks,
};
