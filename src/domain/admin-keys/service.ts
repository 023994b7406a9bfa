import type { WriteOptions } from '../../db/unit-of-work.js';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { inTransaction } from '../../db/connect.js';
import type { AdminKeyTable } from '../../db/types.js';
import { AppError } from '../../errors.js';
import { adminSubjectOf, requireReach } from '../access/admin-scope.js';
import type { AdminSubject, Caller } from '../access/principal.js';
import { BY_CREATION, keysetPage } from '../shared/cursor.js';
import { isUuid, newId, normalizeId, nowIso } from '../shared/ids.js';
import type { Page } from '../shared/schema.js';
import { sha256 } from '../shared/secrets.js';
import type { KeyKind } from '../keys/verifier.js';
import { placeOfSubject } from '../tenancy/places.js';

export const ADMIN_KEY_PATTERN = /^enk_adm_([0-9a-f]{8})([0-9a-f]{64})$/;

export interface AdminKeyRecord {
  adminKeyId: string;
  name: string;
  subject: AdminSubject;
  status: 'active' | 'inactive';
  createdAt: string;
  lastUsedAt: string | null;
}

export const adminSubjectSchema = z
  .discriminatedUnion('type', [z.strictObject({ type: z.literal('instance') }), z.strictObject({ type: z.enum(['partner', 'enterprise']), id: z.uuid() })])
  .describe('`{"type":"instance"}`, or `{"type":"partner"|"enterprise","id":"..."}` for everything beneath it.');

export const createAdminKeyInput = z.strictObject({ name: z.string().trim().min(1).max(128), subject: adminSubjectSchema });

function subjectOf(row: AdminKeyTable): AdminSubject {
  // Normalised here too, so that a stored id in another letter case still reaches its subject.
  return row.subject_type === 'instance' ? { type: 'instance' } : { type: row.subject_type as 'partner' | 'enterprise', id: normalizeId(row.subject_id!) };
}

export function toAdminKeyRecord(row: AdminKeyTable): AdminKeyRecord {
  return {
    adminKeyId: row.id,
    name: row.name,
    subject: subjectOf(row),
    status: row.status === 'active' ? 'active' : 'inactive',
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  };
}

/** Admin keys as bearer credentials (see CachedKeyVerifier): a revocation takes effect within seconds. */
export function adminKeyKind(ctx: AppContext): KeyKind<AdminKeyTable> {
  return {
    pattern: ADMIN_KEY_PATTERN,
    lookup: (prefix) => ctx.db.db.selectFrom('admin_keys').selectAll().where('key_prefix', '=', prefix).executeTakeFirst(),
    secretHashOf: (row) => row.secret_hash,
    usable: (row) => row.status === 'active',
    principalOf: (row) => ({ kind: 'admin_key', keyId: row.id, keyName: row.name, subject: subjectOf(row) }),
    markUsed: (row, at) => ctx.db.db.updateTable('admin_keys').set({ last_used_at: at }).where('id', '=', row.id).execute(),
  };
}

/** Mints an admin key within the caller's subject (the CLI operator may mint any); returned once, only its SHA-256 is stored. */
export async function createAdminKey(ctx: AppContext, caller: Caller, raw: unknown, write: WriteOptions = {}): Promise<AdminKeyRecord & { key: string }> {
  const input = createAdminKeyInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      if (input.subject.type === 'instance') {
        if (adminSubjectOf(caller).type !== 'instance') throw new AppError('subject_not_covered', 'Only an admin key of the whole instance may mint another.');
      } else {
        requireReach(caller, await placeOfSubject(tx.db, input.subject.type, input.subject.id));
      }
      const prefix = randomBytes(4).toString('hex');
      const key = `enk_adm_${prefix}${randomBytes(32).toString('hex')}`;
      const row: AdminKeyTable = {
        id: newId(),
        key_prefix: prefix,
        secret_hash: sha256(key).toString('hex'),
        name: input.name,
        subject_type: input.subject.type,
        subject_id: input.subject.type === 'instance' ? null : normalizeId(input.subject.id),
        status: 'active',
        created_at: nowIso(),
        revoked_at: null,
        last_used_at: null,
      };
      await tx.db.insertInto('admin_keys').values(row).execute();
      return { ...toAdminKeyRecord(row), key };
    },
    write.idempotency,
  );
}

/** Admin keys whose subject lies within the caller's, oldest first. */
export async function listAdminKeys(ctx: AppContext, caller: Caller, params: { cursor?: string; limit: number }): Promise<Page<AdminKeyRecord>> {
  const subject = adminSubjectOf(caller);
  let query = ctx.db.db.selectFrom('admin_keys').selectAll();
  if (subject.type === 'partner') {
    query = query.where((eb) =>
      eb.or([
        eb.and([eb('subject_type', '=', 'partner'), eb('subject_id', '=', subject.id)]),
        eb.and([eb('subject_type', '=', 'enterprise'), eb('subject_id', 'in', eb.selectFrom('enterprises').select('id').where('partner_id', '=', subject.id))]),
      ]),
    );
  } else if (subject.type === 'enterprise') {
    query = query.where('subject_type', '=', 'enterprise').where('subject_id', '=', subject.id);
  }
  return keysetPage(query, BY_CREATION, params, toAdminKeyRecord);
}

/** Revokes an admin key within the caller's subject; it stops authenticating within seconds. Idempotent. */
export async function revokeAdminKey(ctx: AppContext, caller: Caller, id: string, write: WriteOptions = {}): Promise<AdminKeyRecord> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row = isUuid(id) ? await tx.db.selectFrom('admin_keys').selectAll().where('id', '=', id.toLowerCase()).executeTakeFirst() : undefined;
      if (!row) throw new AppError('not_found', `No admin key ${id}.`);
      const subject = subjectOf(row);
      if (subject.type === 'instance') {
        if (adminSubjectOf(caller).type !== 'instance') throw new AppError('not_found', `No admin key ${id}.`);
      } else {
        requireReach(caller, await placeOfSubject(tx.db, subject.type, subject.id), `No admin key ${id}.`);
      }
      if (row.status === 'active') {
        await tx.db.updateTable('admin_keys').set({ status: 'inactive', revoked_at: nowIso() }).where('id', '=', row.id).execute();
      }
      return toAdminKeyRecord({ ...row, status: 'inactive' });
    },
    write.idempotency,
  );
}
