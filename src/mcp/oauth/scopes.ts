import { GRANTS } from '../../domain/access/permissions.js';

/** Every scope the tool server takes: the permissions, and `read` / `write` for all of a kind (extensions §10). */
export const SCOPES: readonly string[] = GRANTS;

/** How the consent page describes each scope. */
export const PERMISSION_SUMMARIES: Record<string, string> = {
  read: 'read everything the key may read',
  write: 'change everything the key may change',
  'emergencies:read': 'read emergencies and their messages',
  'emergencies:write': 'declare, re-categorize and resolve emergencies',
  'messages:write': 'post messages into an emergency',
  'categories:read': 'read emergency categories',
  'users:read': 'read users',
  'audit:read': 'read the audit log',
  'events:read': 'read the event feed, timelines, receipts and base stations',
} satisfies Record<(typeof GRANTS)[number], string>;
