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

export const keyCommands: Record<string, CliCommand> = {
  'admin admin-key create': {
    usage: '--name N --subject instance|partner:ID|enterprise:ID   (an admin key for the admin API; shown once)',
    options: { name: { type: 'string' }, subject: { type: 'string' } },
    run: async ({ ctx, values }) => {
      const created = await createAdminKey(ctx, operatorCaller(), {
        name: requireOption(values, 'name'),
        subject: parseAdminSubject(requireOption(values, 'subject')),
      });
      return { id: created.adminKeyId, key: created.key };
    },
  },
  'admin admin-key list': {
    usage: '(never shows key secrets)',
    run: async ({ ctx }) => ({ items: await listAll((page) => listAdminKeys(ctx, operatorCaller(), page)) }),
  },
  'admin admin-key revoke': {
    usage: 'ID',
    positionals: ['ID'],
    run: async ({ ctx, positionals }) => {
      const record = await revokeAdminKey(ctx, operatorCaller(), positionals[0]!);
      return { id: record.adminKeyId, status: record.status };
    },
  },
  'admin key create': {
    usage: '--name N --subject org:ID|enterprise:ID|partner:ID --permissions read,write [--allowed-orgs ID,ID] [--active-until ISO]',
    options: {
      name: { type: 'string' },
      subject: { type: 'string' },
      permissions: { type: 'string' },
      'allowed-orgs': { type: 'string' },
      'active-until': { type: 'string' },
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
    usage: 'ID',
    positionals: ['ID'],
    run: async ({ ctx, positionals }) => {
      const record = await revokeApiKey(ctx, operatorCaller(), positionals[0]!);
      return { id: record.id, status: record.status };
    },
  },
  'admin key rotate': {
    usage: 'ID [--grace-hours H]   (the old key stays valid for the grace period, default 24)',
    positionals: ['ID'],
    options: { 'grace-hours': { type: 'string' } },
    run: async ({ ctx, positionals, values }) => {
      const hours = values['grace-hours'] === undefined ? 24 : Number(values['grace-hours']);
      if (!Number.isFinite(hours) || hours < 0) throw new UsageError('--grace-hours must be a non-negative number');
      const { id, key, previousKeyExpiresAt } = await rotateApiKey(ctx, operatorCaller(), positionals[0]!, hours * 3600 * 1000);
      return { id, key, previousKeyExpiresAt };
    },
  },
  'admin key list': {
    usage: '(never shows key secrets)',
    run: async ({ ctx }) => ({ items: await listAll((page) => listApiKeys(ctx, operatorCaller(), page)) }),
  },
};
