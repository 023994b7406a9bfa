import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { inTransaction } from '../../db/connect.js';
import type { IntegrationKeyTable } from '../../db/types.js';
import type { WriteOptions } from '../../db/unit-of-work.js';
import { AppError } from '../../errors.js';
import { requireReach } from '../access/admin-scope.js';
import { permissionsOf, type Grant } from '../access/permissions.js';
import type { ApiKeyPrincipal, Caller } from '../access/principal.js';
import { recordAudit } from '../audit/record.js';
import { BY_CREATION, keysetPage } from '../shared/cursor.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import { type Page, timestamp, uuid } from '../shared/schema.js';
import { sha256 } from '../shared/secrets.js';
import type { KeyKind } from '../keys/verifier.js';
import { placeOfOrg } from '../tenancy/places.js';

/**
 * Integration keys (extensions §12): the `routing_key` a PagerDuty Events v2 sender puts in each event. One org's each, shown
 * once, stored as a SHA-256, revocable; they reach nothing but that org's integration endpoint.
 */

/** `enk_int_` and 32 hex digits, like PagerDuty's own 32-character keys; the first 8 are the public id part. */
export const INTEGRATION_KEY_PATTERN = /^enk_int_([0-9a-f]{8})([0-9a-f]{24})$/;
/** Live keys an org may hold: enough for one per monitoring tool, few enough to list on one page. */
const MAX_ACTIVE_KEYS_PER_ORG = 100;
/** What an event may do in its org: declare and resolve, post acknowledgements and repeats as messages, read its own emergency. */
const INTEGRATION_GRANTS: Grant[] = ['emergencies:read', 'emergencies:write', 'messages:write'];

export const integrationKinds = ['pagerduty'] as const;

export const createIntegrationKeyInput = z.strictObject({
  name: z.string().trim().min(1).max(128).describe('What sends with it, e.g. "Datadog production".'),
  kind: z.enum(integrationKinds).default('pagerduty').describe('The protocol it is used with: pagerduty (Events API v2).'),
});

export const integrationKeyRecord = z
  .object({
    id: uuid,
    orgId: uuid,
    kind: z.enum(integrationKinds),
    name: z.string(),
    status: z.enum(['active', 'revoked']),
    createdAt: timestamp,
    lastUsedAt: timestamp.nullable().describe('At one-minute precision.'),
    revokedAt: timestamp.nullable(),
  })
  .meta({ id: 'IntegrationKey' });
export type IntegrationKeyRecord = z.infer<typeof integrationKeyRecord>;

const toRecord = (row: IntegrationKeyTable): IntegrationKeyRecord => ({
  id: row.id,
  orgId: row.org_id,
  kind: row.kind as IntegrationKeyRecord['kind'],
  name: row.name,
  status: row.status as IntegrationKeyRecord['status'],
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

/** Mints a key for an org the admin reaches; the plaintext is in this answer only. */
export async function createIntegrationKey(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  raw: unknown,
  write: WriteOptions = {},
): Promise<{ key: string; record: IntegrationKeyRecord }> {
  const input = createIntegrationKeyInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      const active = await tx.db
        .selectFrom('integration_keys')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('org_id', '=', place.orgId)
        .where('status', '=', 'active')
        .executeTakeFirstOrThrow();
      if (Number(active.n) >= MAX_ACTIVE_KEYS_PER_ORG) {
        throw new AppError('conflict', `The organization already has ${MAX_ACTIVE_KEYS_PER_ORG} active integration keys; revoke one first.`);
      }
      const prefix = randomBytes(4).toString('hex');
      const key = `enk_int_${prefix}${randomBytes(12).toString('hex')}`;
      const row: IntegrationKeyTable = {
        id: newId(),
        org_id: place.orgId,
        kind: input.kind,
        key_prefix: prefix,
        secret_hash: sha256(key).toString('hex'),
        name: input.name,
        status: 'active',
        created_at: nowIso(),
        last_used_at: null,
        revoked_at: null,
      };
      await tx.db.insertInto('integration_keys').values(row).execute();
      recordAudit(tx, caller, {
        orgId: place.orgId,
        eventCategory: 'integration',
        eventType: 'integration_key.created',
        resource: { type: 'integration_key', id: row.id },
        details: { name: row.name, kind: row.kind },
      });
      return { key, record: toRecord(row) };
    },
    write.idempotency,
  );
}

export async function listIntegrationKeys(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  params: { cursor?: string; limit: number },
): Promise<Page<IntegrationKeyRecord>> {
  const place = await placeOfOrg(ctx.db.db, orgId);
  requireReach(caller, place);
  const query = ctx.db.db.selectFrom('integration_keys').selectAll().where('org_id', '=', place.orgId);
  return keysetPage(query, BY_CREATION, params, toRecord);
}

/** Revokes a key (in force within seconds on every instance, as for API keys); revoking a revoked key changes nothing. */
export async function revokeIntegrationKey(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  keyId: string,
  write: WriteOptions = {},
): Promise<IntegrationKeyRecord> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      const row = isUuid(keyId)
        ? await tx.db.selectFrom('integration_keys').selectAll().where('org_id', '=', place.orgId).where('id', '=', keyId.toLowerCase()).executeTakeFirst()
        : undefined;
      if (!row) throw new AppError('not_found', `No integration key ${keyId} in this organization.`);
      if (row.status === 'revoked') return toRecord(row);
      const revoked = { ...row, status: 'revoked', revoked_at: nowIso() };
      await tx.db.updateTable('integration_keys').set({ status: 'revoked', revoked_at: revoked.revoked_at }).where('id', '=', row.id).execute();
      recordAudit(tx, caller, {
        orgId: place.orgId,
        eventCategory: 'integration',
        eventType: 'integration_key.revoked',
        resource: { type: 'integration_key', id: row.id },
        details: { name: row.name, kind: row.kind },
      });
      return toRecord(revoked);
    },
    write.idempotency,
  );
}

/** The caller an integration key makes: its org only, with what sending events needs, named as the integration. */
function integrationPrincipal(row: IntegrationKeyTable): ApiKeyPrincipal {
  return {
    kind: 'api_key',
    keyId: row.id,
    keyName: row.name,
    subjectType: 'org',
    subjectId: row.org_id,
    allowedOrgIds: null,
    grants: INTEGRATION_GRANTS,
    permissions: permissionsOf(INTEGRATION_GRANTS),
    integration: { kind: 'pagerduty', id: row.id, name: row.name },
  };
}

/** Integration keys as credentials: see CachedKeyVerifier (a revocation is seen within its cache's few seconds). */
export function integrationKeyKind(ctx: AppContext): KeyKind<IntegrationKeyTable> {
  return {
    pattern: INTEGRATION_KEY_PATTERN,
    lookup: (prefix) => ctx.db.db.selectFrom('integration_keys').selectAll().where('key_prefix', '=', prefix).executeTakeFirst(),
    secretHashOf: (row) => row.secret_hash,
    usable: (row) => row.status === 'active',
    principalOf: integrationPrincipal,
    markUsed: (row, at) => ctx.db.db.updateTable('integration_keys').set({ last_used_at: at }).where('id', '=', row.id).execute(),
  };
}
