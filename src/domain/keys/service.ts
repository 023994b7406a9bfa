import type { WriteOptions } from '../../db/unit-of-work.js';
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { inTransaction, type Tx } from '../../db/connect.js';
import type { ApiKeyTable } from '../../db/types.js';
import type { ApiKeyPrincipal, Caller, OAuthActor, SubjectType } from '../access/principal.js';
import { type Grant, permissionsOf } from '../access/permissions.js';
import { recordAudit } from '../audit/record.js';
import { AppError } from '../../errors.js';
import { adminSubjectOf, requireReach } from '../access/admin-scope.js';
import { BY_CREATION, keysetPage } from '../shared/cursor.js';
import { isUuid, newId, normalizeId, nowIso } from '../shared/ids.js';
import type { Page } from '../shared/schema.js';
import { placeOfSubject, requireOrgsWithinSubject, subjectWithin } from '../tenancy/places.js';
import { fromJson, toJson } from '../shared/json.js';
import { sha256 } from '../shared/secrets.js';
import type { KeyKind } from './verifier.js';

export const KEY_PATTERN = /^enk_live_([0-9a-f]{8})([0-9a-f]{64})$/;
/** The keys of a sandbox instance (extensions §11): the only ones it takes, and never taken by a live one. */
export const TEST_KEY_PATTERN = /^enk_test_([0-9a-f]{8})([0-9a-f]{64})$/;

/** The form of the API keys this instance mints and takes: live, or test on a sandbox. */
const keyFormOf = (ctx: AppContext) =>
  ctx.config.SANDBOX ? { prefix: 'enk_test_', pattern: TEST_KEY_PATTERN } : { prefix: 'enk_live_', pattern: KEY_PATTERN };
const ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

export interface KeySpec {
  name: string;
  subjectType: SubjectType;
  subjectId: string;
  permissions: Grant[];
  allowedOrgIds?: string[] | null;
  activeUntil?: string | null;
}

export interface KeyRecord {
  id: string;
  name: string;
  subject: { type: string; id: string };
  allowedOrgIds: string[] | null;
  permissions: string[];
  activeUntilDate: string | null;
  status: string;
  createdAt: string;
  lastUsedAt: string | null;
}

function mintPlaintext(ctx: AppContext): { plaintext: string; prefix: string } {
  const prefix = randomBytes(4).toString('hex');
  return { plaintext: `${keyFormOf(ctx).prefix}${prefix}${randomBytes(32).toString('hex')}`, prefix };
}

export function toKeyRecord(row: ApiKeyTable): KeyRecord {
  return {
    id: row.id,
    name: row.name,
    subject: { type: row.subject_type, id: row.subject_id },
    allowedOrgIds: fromJson<string[]>(row.allowed_org_ids),
    permissions: row.permissions.split(',').filter(Boolean),
    activeUntilDate: row.active_until,
    status: row.status,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  };
}

/** The orgs a subject reaches today: where key lifecycle entries are written in the audit log. */
async function coveredOrgIds(tx: Tx, subjectType: string, subjectId: string, allowed: string[] | null): Promise<string[]> {
  const column = subjectType === 'org' ? 'id' : subjectType === 'enterprise' ? 'enterprise_id' : 'partner_id';
  const rows = await tx.db.selectFrom('orgs').select('id').where(column, '=', subjectId).execute();
  return rows.map((r) => r.id).filter((id) => allowed === null || allowed.includes(id));
}

async function auditKeyEvent(
  tx: Tx,
  caller: Caller,
  row: Pick<ApiKeyTable, 'id' | 'name' | 'subject_type' | 'subject_id' | 'allowed_org_ids'>,
  eventType: string,
  details: Record<string, unknown>,
) {
  for (const orgId of await coveredOrgIds(tx, row.subject_type, row.subject_id, fromJson<string[]>(row.allowed_org_ids))) {
    recordAudit(tx, caller, {
      orgId,
      eventCategory: 'api_key',
      eventType,
      resource: { type: 'api_key', id: row.id },
      details: { name: row.name, ...details },
    });
  }
}

async function insertKey(ctx: AppContext, tx: Tx, spec: KeySpec): Promise<{ row: ApiKeyTable; plaintext: string }> {
  const { plaintext, prefix } = mintPlaintext(ctx);
  const row: ApiKeyTable = {
    id: newId(),
    key_prefix: prefix,
    secret_hash: sha256(plaintext).toString('hex'),
    name: spec.name,
    subject_type: spec.subjectType,
    subject_id: normalizeId(spec.subjectId),
    allowed_org_ids: toJson(spec.allowedOrgIds?.map(normalizeId) ?? null),
    permissions: [...new Set(spec.permissions)].sort().join(','),
    active_until: spec.activeUntil ?? null,
    status: 'active',
    created_at: nowIso(),
    last_used_at: null,
    rotated_to: null,
  };
  await tx.db.insertInto('api_keys').values(row).execute();
  return { row, plaintext };
}

/** Mints an API key for a subject within the caller's; the key is returned once, only its SHA-256 is stored. */
export async function createApiKey(
  ctx: AppContext,
  caller: Caller,
  spec: KeySpec,
  write: WriteOptions = {},
): Promise<{ id: string; key: string; record: KeyRecord }> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      requireReach(caller, await placeOfSubject(tx.db, spec.subjectType, spec.subjectId));
      await requireOrgsWithinSubject(tx.db, { type: spec.subjectType, id: spec.subjectId }, spec.allowedOrgIds, ['body', 'allowedOrgIds']);
      const { row, plaintext } = await insertKey(ctx, tx, spec);
      await auditKeyEvent(tx, caller, row, 'api_key.created', {
        subject: { type: row.subject_type, id: row.subject_id },
        permissions: spec.permissions,
      });
      return { id: row.id, key: plaintext, record: toKeyRecord(row) };
    },
    write.idempotency,
  );
}

/** The key row, when it exists and its subject lies within the caller's (else 404, outside it as when unknown). */
async function loadKey(tx: Pick<Tx, 'db'>, caller: Caller, keyId: string): Promise<ApiKeyTable> {
  const row = isUuid(keyId) ? await tx.db.selectFrom('api_keys').selectAll().where('id', '=', keyId.toLowerCase()).executeTakeFirst() : undefined;
  if (!row) throw new AppError('not_found', `No API key ${keyId}.`);
  requireReach(caller, await placeOfSubject(tx.db, row.subject_type as SubjectType, row.subject_id), `No API key ${keyId}.`);
  return row;
}

export async function getApiKey(ctx: AppContext, caller: Caller, keyId: string): Promise<KeyRecord> {
  return toKeyRecord(await loadKey(ctx.db, caller, keyId));
}

export async function revokeApiKey(ctx: AppContext, caller: Caller, keyId: string, write: WriteOptions = {}): Promise<KeyRecord> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row = await loadKey(tx, caller, keyId);
      await tx.db.updateTable('api_keys').set({ status: 'inactive' }).where('id', '=', row.id).execute();
      await auditKeyEvent(tx, caller, row, 'api_key.revoked', {});
      return toKeyRecord({ ...row, status: 'inactive' });
    },
    write.idempotency,
  );
}

/** Mints a successor with the same grants; the old key keeps working until the grace expiry. */
export async function rotateApiKey(
  ctx: AppContext,
  caller: Caller,
  keyId: string,
  graceMs = ROTATION_GRACE_MS,
  write: WriteOptions = {},
): Promise<{ id: string; key: string; previousKeyExpiresAt: string; record: KeyRecord }> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const old = await loadKey(tx, caller, keyId);
      if (old.status !== 'active') throw new AppError('conflict', `API key ${keyId} is inactive and cannot be rotated.`);
      const { row, plaintext } = await insertKey(ctx, tx, {
        name: old.name,
        subjectType: old.subject_type as SubjectType,
        subjectId: old.subject_id,
        permissions: old.permissions.split(',') as Grant[],
        allowedOrgIds: fromJson<string[]>(old.allowed_org_ids),
        activeUntil: old.active_until,
      });
      const graceEnd = new Date(Date.now() + graceMs).toISOString();
      const expiresAt = old.active_until !== null && old.active_until < graceEnd ? old.active_until : graceEnd;
      await tx.db.updateTable('api_keys').set({ active_until: expiresAt, rotated_to: row.id }).where('id', '=', old.id).execute();
      await auditKeyEvent(tx, caller, old, 'api_key.rotated', { successorKeyId: row.id, previousKeyExpiresAt: expiresAt });
      return { id: row.id, key: plaintext, previousKeyExpiresAt: expiresAt, record: toKeyRecord(row) };
    },
    write.idempotency,
  );
}

/** API keys whose subject lies within the caller's, oldest first (never their secrets). */
export async function listApiKeys(ctx: AppContext, caller: Caller, params: { cursor?: string; limit: number }): Promise<Page<KeyRecord>> {
  const query = ctx.db.db
    .selectFrom('api_keys')
    .selectAll()
    .where(subjectWithin(ctx.db.db, adminSubjectOf(caller)));
  return keysetPage(query, BY_CREATION, params, toKeyRecord);
}

/** Whether a key works at `now`: not revoked, and before its expiry (a rotated key's grace end included). */
export const apiKeyUsable = (row: Pick<ApiKeyTable, 'status' | 'active_until'>, now: number): boolean =>
  row.status === 'active' && (row.active_until === null || Date.parse(row.active_until) > now);

/** The caller an API key row makes; `oauth` when an OAuth client acts with it (through a grant of the consent page). */
export function apiKeyPrincipal(row: ApiKeyTable, scopes?: { grants: Grant[]; oauth: OAuthActor }): ApiKeyPrincipal {
  const keyGrants = row.permissions.split(',').filter(Boolean) as Grant[];
  const keyPermissions = permissionsOf(keyGrants);
  if (!scopes) {
    return {
      kind: 'api_key',
      keyId: row.id,
      keyName: row.name,
      subjectType: row.subject_type as SubjectType,
      subjectId: row.subject_id,
      allowedOrgIds: fromJson<string[]>(row.allowed_org_ids),
      grants: keyGrants,
      permissions: keyPermissions,
    };
  }
  // A grant never reaches past its key, whatever its scopes say.
  const permissions = new Set([...permissionsOf(scopes.grants)].filter((p) => keyPermissions.has(p)));
  return { ...apiKeyPrincipal(row), grants: scopes.grants, permissions, oauth: scopes.oauth };
}

/** API keys as bearer credentials: see CachedKeyVerifier. */
export function apiKeyKind(ctx: AppContext): KeyKind<ApiKeyTable> {
  return {
    pattern: keyFormOf(ctx).pattern,
    lookup: (prefix) => ctx.db.db.selectFrom('api_keys').selectAll().where('key_prefix', '=', prefix).executeTakeFirst(),
    secretHashOf: (row) => row.secret_hash,
    usable: (row, now) => apiKeyUsable(row, now),
    principalOf: (row) => apiKeyPrincipal(row),
    markUsed: (row, at) => ctx.db.db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', row.id).execute(),
  };
}
