import type { z } from 'zod';
import { type apiKeyRecord, presentApiKey } from '../domain/presenters/admin-records.js';
import { type AdminSubject, operatorCaller } from '../domain/access/principal.js';
import { GRANTS, type Grant } from '../domain/access/permissions.js';
import { type AdminKeyRecord, createAdminKey, listAdminKeys, revokeAdminKey } from '../domain/admin-keys/service.js';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey } from '../domain/keys/service.js';
import { path, secretOf } from './admin-api.js';
import { type AdminList, adminCommand, itemsOf, pageOf } from './admin-command.js';
import { type CliCommand, parseIdList, parseSubject, requireOption, UsageError } from './command.js';

function parsePermissions(value: string): Grant[] {
  const perms = value
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const unknown = perms.filter((p) => !(GRANTS as readonly string[]).includes(p));
  if (perms.length === 0 || unknown.length > 0) {
    throw new UsageError(`--permissions takes a comma-separated list of ${GRANTS.join(', ')}${unknown.length ? ` (not ${unknown.join(', ')})` : ''}`);
  }
  return perms as Grant[];
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

/** An API key as the admin API answers it (`apiKeyId`), with the key in a creating or rotating answer. */
export type ApiKeyRecord = z.infer<typeof apiKeyRecord>;

/** An API key as the commands print it (never the key itself). */
const apiKeyRow = (r: ApiKeyRecord) => ({
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

/** An admin key as the commands print it: the admin API's record without a secret. */
const adminKeyRow = (r: AdminKeyRecord): AdminKeyRecord => ({
  adminKeyId: r.adminKeyId,
  name: r.name,
  subject: r.subject,
  status: r.status,
  createdAt: r.createdAt,
  lastUsedAt: r.lastUsedAt,
});

const API_KEYS: AdminList<void, ApiKeyRecord> = {
  page: (ctx, _, page) => pageOf(listApiKeys(ctx, operatorCaller(), page), presentApiKey),
  route: () => '/api-keys',
};
const ADMIN_KEYS: AdminList<void, AdminKeyRecord> = {
  page: (ctx, _, page) => listAdminKeys(ctx, operatorCaller(), page),
  route: () => '/admin-keys',
};

const KEY_COLUMNS = ['id', 'name', 'subject', 'permissions', 'allowedOrgIds', 'activeUntilDate', 'status', 'lastUsedAt'];
const ADMIN_KEY_COLUMNS = ['adminKeyId', 'name', 'subject', 'status', 'createdAt', 'lastUsedAt'];
/** The longest grace period of a rotation the admin API accepts. */
const MAX_GRACE_HOURS = 24 * 30;

export const keyCommands: Record<string, CliCommand> = {
  'admin admin-key create': adminCommand({
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
    local: (ctx, body): Promise<AdminKeyRecord & { key?: string }> => createAdminKey(ctx, operatorCaller(), body),
    route: (body) => ({ post: '/admin-keys', body }),
    present: (created) => ({ id: created.adminKeyId, key: secretOf(created.key, `admin key ${created.adminKeyId}`, 'revoke it and create another') }),
  }),
  'admin admin-key list': adminCommand({
    summary: 'list admin keys (never their secrets)',
    columns: ADMIN_KEY_COLUMNS,
    input: () => undefined,
    read: (read) => read(ADMIN_KEYS, undefined),
    present: itemsOf(adminKeyRow),
  }),
  'admin admin-key revoke': adminCommand({
    summary: 'revoke an admin key',
    positionals: [{ name: 'ID', description: 'the admin key id' }],
    input: ({ positionals }) => positionals[0]!,
    local: (ctx, id) => revokeAdminKey(ctx, operatorCaller(), id),
    route: (id) => ({ post: path`/admin-keys/${id}/revoke` }),
    present: (record) => ({ id: record.adminKeyId, status: record.status }),
  }),
  'admin key create': adminCommand({
    summary: 'mint an API key for the public API; prints it once',
    options: {
      name: { type: 'string', value: 'N', required: true, description: 'a name for the key (shown as declaredBy)' },
      subject: { type: 'string', value: 'SUBJECT', required: true, description: 'org:ID, enterprise:ID or partner:ID (covers every org beneath it)' },
      permissions: {
        type: 'string',
        value: 'PERMS',
        required: true,
        description: 'comma-separated: read, write, or resource permissions such as emergencies:read,messages:write',
      },
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
    local: async (ctx, spec): Promise<ApiKeyRecord> => {
      const { key, record } = await createApiKey(ctx, operatorCaller(), spec);
      return { ...presentApiKey(record), key };
    },
    route: (spec) => ({
      post: '/api-keys',
      body: {
        name: spec.name,
        subject: { type: spec.subjectType, id: spec.subjectId },
        permissions: spec.permissions,
        allowedOrgIds: spec.allowedOrgIds,
        activeUntilDate: spec.activeUntil,
      },
    }),
    present: (created) => ({ id: created.apiKeyId, key: secretOf(created.key, `API key ${created.apiKeyId}`, 'rotate it to get a key') }),
  }),
  'admin key revoke': adminCommand({
    summary: 'revoke an API key (refused within 2 s)',
    positionals: [{ name: 'ID', description: 'the key id' }],
    input: ({ positionals }) => positionals[0]!,
    local: async (ctx, id) => presentApiKey(await revokeApiKey(ctx, operatorCaller(), id)),
    route: (id) => ({ post: path`/api-keys/${id}/revoke` }),
    present: (record) => ({ id: record.apiKeyId, status: record.status }),
  }),
  'admin key rotate': adminCommand({
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
    local: async (ctx, { id, graceHours }): Promise<ApiKeyRecord> => {
      const { key, record, previousKeyExpiresAt } = await rotateApiKey(ctx, operatorCaller(), id, graceHours * 3600 * 1000);
      return { ...presentApiKey(record), key, previousKeyExpiresAt };
    },
    route: ({ id, graceHours }) => ({ post: path`/api-keys/${id}/rotate`, body: { graceHours } }),
    present: (rotated, { id }) => ({
      id: rotated.apiKeyId,
      key: secretOf(rotated.key, `successor of API key ${id}`, `revoke ${rotated.apiKeyId} and rotate ${id} again`),
      previousKeyExpiresAt: rotated.previousKeyExpiresAt!,
    }),
  }),
  'admin key list': adminCommand({
    summary: 'list API keys (never their secrets)',
    columns: KEY_COLUMNS,
    input: () => undefined,
    read: (read) => read(API_KEYS, undefined),
    present: itemsOf(apiKeyRow),
  }),
};
