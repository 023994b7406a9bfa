import { type AdminSubject, operatorCaller } from '../domain/access/principal.js';
import { createAdminKey, listAdminKeys, revokeAdminKey } from '../domain/admin-keys/service.js';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey } from '../domain/keys/service.js';
import { type CliCommand, listAll, parseIdList, parseSubject, requireOption, UsageError } from './command.js';

function parsePermissions(value: string): ('read' | 'write')[] {
  const perms = value
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  if (perms.length === 0 || !perms.every((p) => p === 'read' || p === 'write')) {
    throw new UsageError('--permissions must be read, write or read,write');
  }
  return perms as ('read' | 'write')[];
}

function parseExpiry(value: string | boolean | undefined): string | null {
  if (typeof value !== 'string') return null;
  if (!/(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(Date.parse(value))) {
    throw new UsageError('--active-until must be an ISO-8601 timestamp with a zone, e.g. 2027-01-01T00:00:00Z');
  }
  return new Date(value).toISOString();
}

/** `instance`, `partner:ID` or `enterprise:ID`. */
function parseAdminSubject(value: string): AdminSubject {
  if (value === 'instance') return { type: 'instance' };
  const match = /^(partner|enterprise):([0-9a-fA-F-]{36})$/.exec(value);
  if (!match) throw new UsageError('--subject must be instance, partner:ID or enterprise:ID');
  return { type: match[1] as 'partner' | 'enterprise', id: match[2]!.toLowerCase() };
}

const KEY_COLUMNS = ['id', 'name', 'subject', 'permissions', 'allowedOrgIds', 'activeUntilDate', 'status', 'lastUsedAt'];
const ADMIN_KEY_COLUMNS = ['adminKeyId', 'name', 'subject', 'status', 'createdAt', 'lastUsedAt'];

export const keyCommands: Record<string, CliCommand> = {
  'admin admin-key create': {
    summary: 'mint an admin key for the admin API; prints it once',
    options: {
      name: { type: 'string', value: 'N', required: true, description: 'a name for the key' },
      subject: {
        type: 'string',
        value: 'SUBJECT',
        required: true,
        description: 'instance (everything), partner:ID or enterprise:ID (everything beneath it)',
      },
    },
    run: async ({ ctx, values }) => {
      const created = await createAdminKey(ctx, operatorCaller(), {
        name: requireOption(values, 'name'),
        subject: parseAdminSubject(requireOption(values, 'subject')),
      });
      return { id: created.adminKeyId, key: created.key };
    },
  },
  'admin admin-key list': {
    summary: 'list admin keys (never their secrets)',
    columns: ADMIN_KEY_COLUMNS,
    run: async ({ ctx }) => ({ items: await listAll((page) => listAdminKeys(ctx, operatorCaller(), page)) }),
  },
  'admin admin-key revoke': {
    summary: 'revoke an admin key',
    positionals: [{ name: 'ID', description: 'the admin key id' }],
    run: async ({ ctx, positionals }) => {
      const record = await revokeAdminKey(ctx, operatorCaller(), positionals[0]!);
      return { id: record.adminKeyId, status: record.status };
    },
  },
  'admin key create': {
    summary: 'mint an API key for the public API; prints it once',
    options: {
      name: { type: 'string', value: 'N', required: true, description: 'a name for the key (shown as declaredBy)' },
      subject: { type: 'string', value: 'SUBJECT', required: true, description: 'org:ID, enterprise:ID or partner:ID (covers every org beneath it)' },
      permissions: { type: 'string', value: 'PERMS', required: true, description: 'read, write or read,write' },
      'allowed-orgs': { type: 'string', value: 'ID,ID', description: 'narrow the key to these orgs of its subject' },
      'active-until': { type: 'string', value: 'ISO', description: 'expiry, an ISO-8601 timestamp with a zone, e.g. 2027-01-01T00:00:00Z' },
    },
    run: async ({ ctx, values }) => {
      const { id, key } = await createApiKey(ctx, operatorCaller(), {
        name: requireOption(values, 'name'),
        ...parseSubject(requireOption(values, 'subject')),
        permissions: parsePermissions(requireOption(values, 'permissions')),
        allowedOrgIds: parseIdList(values['allowed-orgs'], 'allowed-orgs'),
        activeUntil: parseExpiry(values['active-until']),
      });
      return { id, key };
    },
  },
  'admin key revoke': {
    summary: 'revoke an API key (refused within 2 s)',
    positionals: [{ name: 'ID', description: 'the key id' }],
    run: async ({ ctx, positionals }) => {
      const record = await revokeApiKey(ctx, operatorCaller(), positionals[0]!);
      return { id: record.id, status: record.status };
    },
  },
  'admin key rotate': {
    summary: 'mint a successor with the same grants; prints it once; the old key expires after a grace period',
    positionals: [{ name: 'ID', description: 'the key id' }],
    options: { 'grace-hours': { type: 'string', value: 'H', description: 'hours the old key stays valid (default 24)' } },
    run: async ({ ctx, positionals, values }) => {
      const hours = values['grace-hours'] === undefined ? 24 : Number(values['grace-hours']);
      if (!Number.isFinite(hours) || hours < 0) throw new UsageError('--grace-hours must be a non-negative number');
      const { id, key, previousKeyExpiresAt } = await rotateApiKey(ctx, operatorCaller(), positionals[0]!, hours * 3600 * 1000);
      return { id, key, previousKeyExpiresAt };
    },
  },
  'admin key list': {
    summary: 'list API keys (never their secrets)',
    columns: KEY_COLUMNS,
    run: async ({ ctx }) => ({ items: await listAll((page) => listApiKeys(ctx, operatorCaller(), page)) }),
  },
};
