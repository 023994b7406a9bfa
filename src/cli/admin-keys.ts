import { type AdminSubject, operatorCaller } from '../domain/access/principal.js';
import { type AdminKeyRecord, createAdminKey, listAdminKeys, revokeAdminKey } from '../domain/admin-keys/service.js';
import { createApiKey, type KeyRecord, type KeySpec, listApiKeys, revokeApiKey, rotateApiKey } from '../domain/keys/service.js';
import { type AdminApi, path, secretOf } from './admin-api.js';
import { adminCommand, type CliCommand, listAll, parseIdList, parseSubject, requireOption, UsageError } from './command.js';

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

/** An API key as the commands show it (never the key itself). */
interface ApiKeyView {
  id: string;
  name: string;
  subject: { type: string; id: string };
  permissions: string[];
  allowedOrgIds: string[] | null;
  activeUntilDate: string | null;
  status: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** The admin API's record of an API key (`apiKeyId`), with the key in a creating or rotating answer. */
type ApiKeyAnswer = Omit<ApiKeyView, 'id'> & { apiKeyId: string; key?: string; previousKeyExpiresAt?: string };

const keyView = (r: KeyRecord): ApiKeyView => ({
  id: r.id,
  name: r.name,
  subject: r.subject,
  permissions: r.permissions,
  allowedOrgIds: r.allowedOrgIds,
  activeUntilDate: r.activeUntilDate,
  status: r.status === 'active' ? 'active' : 'inactive',
  createdAt: r.createdAt,
  lastUsedAt: r.lastUsedAt,
});

const keyViewOf = (r: ApiKeyAnswer): ApiKeyView => ({
  id: r.apiKeyId,
  name: r.name,
  subject: r.subject,
  permissions: r.permissions,
  allowedOrgIds: r.allowedOrgIds,
  activeUntilDate: r.activeUntilDate,
  status: r.status,
  createdAt: r.createdAt,
  lastUsedAt: r.lastUsedAt,
});

const KEY_COLUMNS = ['id', 'name', 'subject', 'permissions', 'allowedOrgIds', 'activeUntilDate', 'status', 'lastUsedAt'];
const ADMIN_KEY_COLUMNS = ['adminKeyId', 'name', 'subject', 'status', 'createdAt', 'lastUsedAt'];
/** The longest grace period of a rotation the admin API accepts. */
const MAX_GRACE_HOURS = 24 * 30;

type NewKey = { id: string; key: string };
type Revoked = { id: string; status: string };

const adminKeyView = (r: AdminKeyRecord): AdminKeyRecord => ({
  adminKeyId: r.adminKeyId,
  name: r.name,
  subject: r.subject,
  status: r.status,
  createdAt: r.createdAt,
  lastUsedAt: r.lastUsedAt,
});

export const keyCommands: Record<string, CliCommand> = {
  'admin admin-key create': adminCommand<{ name: string; subject: AdminSubject }, NewKey>({
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
    details: ['On a new installation it creates the database: it mints the first admin key, before the server has ever run.'],
    // The bootstrap of a new installation: its first admin key, before any server ran.
    createsDatabase: true,
    input: ({ values }) => ({ name: requireOption(values, 'name'), subject: parseAdminSubject(requireOption(values, 'subject')) }),
    local: async (ctx, body) => {
      const created = await createAdminKey(ctx, operatorCaller(), body);
      return { id: created.adminKeyId, key: created.key };
    },
    remote: async (api, body) => {
      const created = await api.post<AdminKeyRecord & { key?: string }>('/admin-keys', body);
      return { id: created.adminKeyId, key: secretOf(created.key, `admin key ${created.adminKeyId}`, 'revoke it and create another') };
    },
  }),
  'admin admin-key list': adminCommand<void, { items: AdminKeyRecord[] }>({
    summary: 'list admin keys (never their secrets)',
    columns: ADMIN_KEY_COLUMNS,
    input: () => undefined,
    local: async (ctx) => ({ items: (await listAll((page) => listAdminKeys(ctx, operatorCaller(), page))).map(adminKeyView) }),
    remote: async (api) => ({ items: (await listAll((page) => api.page<AdminKeyRecord>('/admin-keys', page))).map(adminKeyView) }),
  }),
  'admin admin-key revoke': adminCommand<string, Revoked>({
    summary: 'revoke an admin key',
    positionals: [{ name: 'ID', description: 'the admin key id' }],
    input: ({ positionals }) => positionals[0]!,
    local: async (ctx, id) => {
      const record = await revokeAdminKey(ctx, operatorCaller(), id);
      return { id: record.adminKeyId, status: record.status };
    },
    remote: async (api, id) => {
      const record = await api.post<AdminKeyRecord>(path`/admin-keys/${id}/revoke`);
      return { id: record.adminKeyId, status: record.status };
    },
  }),
  'admin key create': adminCommand<KeySpec, NewKey>({
    summary: 'mint an API key for the public API; prints it once',
    options: {
      name: { type: 'string', value: 'N', required: true, description: 'a name for the key (shown as declaredBy)' },
      subject: { type: 'string', value: 'SUBJECT', required: true, description: 'org:ID, enterprise:ID or partner:ID (covers every org beneath it)' },
      permissions: { type: 'string', value: 'PERMS', required: true, description: 'read, write or read,write' },
      'allowed-orgs': { type: 'string', value: 'ID,ID', description: 'narrow the key to these orgs of its subject' },
      'active-until': { type: 'string', value: 'ISO', description: 'expiry, an ISO-8601 timestamp with a zone, e.g. 2027-01-01T00:00:00Z' },
    },
    input: ({ values }) => ({
      name: requireOption(values, 'name'),
      ...parseSubject(requireOption(values, 'subject')),
      permissions: parsePermissions(requireOption(values, 'permissions')),
      allowedOrgIds: parseIdList(values['allowed-orgs'], 'allowed-orgs'),
      activeUntil: parseExpiry(values['active-until']),
    }),
    local: async (ctx, spec) => {
      const { id, key } = await createApiKey(ctx, operatorCaller(), spec);
      return { id, key };
    },
    remote: async (api, spec) => {
      const created = await api.post<ApiKeyAnswer>('/api-keys', {
        name: spec.name,
        subject: { type: spec.subjectType, id: spec.subjectId },
        permissions: spec.permissions,
        allowedOrgIds: spec.allowedOrgIds,
        activeUntilDate: spec.activeUntil,
      });
      return { id: created.apiKeyId, key: secretOf(created.key, `API key ${created.apiKeyId}`, 'rotate it to get a key') };
    },
  }),
  'admin key revoke': adminCommand<string, Revoked>({
    summary: 'revoke an API key (refused within 2 s)',
    positionals: [{ name: 'ID', description: 'the key id' }],
    input: ({ positionals }) => positionals[0]!,
    local: async (ctx, id) => {
      const record = keyView(await revokeApiKey(ctx, operatorCaller(), id));
      return { id: record.id, status: record.status };
    },
    remote: async (api, id) => {
      const record = await api.post<ApiKeyAnswer>(path`/api-keys/${id}/revoke`);
      return { id: record.apiKeyId, status: record.status };
    },
  }),
  'admin key rotate': adminCommand<{ id: string; graceHours: number }, NewKey & { previousKeyExpiresAt: string }>({
    summary: 'mint a successor with the same grants; prints it once; the old key expires after a grace period',
    positionals: [{ name: 'ID', description: 'the key id' }],
    options: { 'grace-hours': { type: 'string', value: 'H', description: `hours the old key stays valid, 0 to ${MAX_GRACE_HOURS} (default 24)` } },
    input: ({ positionals, values }) => {
      const graceHours = values['grace-hours'] === undefined ? 24 : Number(values['grace-hours']);
      if (!Number.isFinite(graceHours) || graceHours < 0 || graceHours > MAX_GRACE_HOURS) {
        throw new UsageError(`--grace-hours must be a number of hours from 0 to ${MAX_GRACE_HOURS}`);
      }
      return { id: positionals[0]!, graceHours };
    },
    local: async (ctx, { id, graceHours }) => {
      const rotated = await rotateApiKey(ctx, operatorCaller(), id, graceHours * 3600 * 1000);
      return { id: rotated.id, key: rotated.key, previousKeyExpiresAt: rotated.previousKeyExpiresAt };
    },
    remote: async (api, { id, graceHours }) => {
      const rotated = await api.post<ApiKeyAnswer>(path`/api-keys/${id}/rotate`, { graceHours });
      return {
        id: rotated.apiKeyId,
        key: secretOf(rotated.key, `successor of API key ${id}`, `revoke ${rotated.apiKeyId} and rotate ${id} again`),
        previousKeyExpiresAt: rotated.previousKeyExpiresAt!,
      };
    },
  }),
  'admin key list': adminCommand<void, { items: ApiKeyView[] }>({
    summary: 'list API keys (never their secrets)',
    columns: KEY_COLUMNS,
    input: () => undefined,
    local: async (ctx) => ({ items: (await listAll((page) => listApiKeys(ctx, operatorCaller(), page))).map(keyView) }),
    remote: async (api: AdminApi) => ({ items: (await listAll((page) => api.page<ApiKeyAnswer>('/api-keys', page))).map(keyViewOf) }),
  }),
};
