import { type Expression, type ExpressionBuilder, type Kysely, type SqlBool, sql } from 'kysely';
import type { Database } from '../../db/types.js';
import { AppError, FieldValidationError } from '../../errors.js';
import type { Place } from '../access/admin-scope.js';
import type { AdminSubject } from '../access/principal.js';
import { isUuid, normalizeId } from '../shared/ids.js';

/**
 * Where a partner, enterprise or org sits, for the admin gate. An id that names nothing is a 404
 * `not_found` (with the kind named), whatever the caller's subject.
 */

/** The 404 message of an id that names nothing, and of one outside the admin key's subject alike. */
const unknownId = {
  partner: (id: string) => `No partner ${id}.`,
  enterprise: (id: string) => `No enterprise ${id}.`,
  org: (id: string) => `No organization ${id}.`,
};

export async function placeOfPartner(db: Kysely<Database>, partnerId: string): Promise<Place> {
  const row = isUuid(partnerId) ? await db.selectFrom('partners').select('id').where('id', '=', partnerId.toLowerCase()).executeTakeFirst() : undefined;
  if (!row) throw new AppError('not_found', unknownId.partner(partnerId));
  return { partnerId: row.id, unknown: unknownId.partner(partnerId) };
}

export async function placeOfEnterprise(db: Kysely<Database>, enterpriseId: string): Promise<Place> {
  const row = isUuid(enterpriseId)
    ? await db.selectFrom('enterprises').select(['id', 'partner_id']).where('id', '=', enterpriseId.toLowerCase()).executeTakeFirst()
    : undefined;
  if (!row) throw new AppError('not_found', unknownId.enterprise(enterpriseId));
  return { partnerId: row.partner_id, enterpriseId: row.id, unknown: unknownId.enterprise(enterpriseId) };
}

export async function placeOfOrg(db: Kysely<Database>, orgId: string): Promise<Place & { orgId: string; enterpriseId: string }> {
  const row = isUuid(orgId)
    ? await db.selectFrom('orgs').select(['id', 'enterprise_id', 'partner_id']).where('id', '=', orgId.toLowerCase()).executeTakeFirst()
    : undefined;
  if (!row) throw new AppError('not_found', unknownId.org(orgId));
  return { partnerId: row.partner_id, enterpriseId: row.enterprise_id, orgId: row.id, unknown: unknownId.org(orgId) };
}

/** The place of an API-key, webhook or admin-key subject. */
export function placeOfSubject(db: Kysely<Database>, type: 'partner' | 'enterprise' | 'org', id: string): Promise<Place> {
  if (type === 'partner') return placeOfPartner(db, id);
  if (type === 'enterprise') return placeOfEnterprise(db, id);
  return placeOfOrg(db, id);
}

/**
 * Refuses (422, on `loc` and the index of each) `allowedOrgIds` naming an org outside the subject of the key or subscription:
 * another tenant's org and an id that names nothing get the same answer, so that neither can be probed this way.
 */
export async function requireOrgsWithinSubject(
  db: Kysely<Database>,
  subject: { type: 'partner' | 'enterprise' | 'org'; id: string },
  orgIds: readonly string[] | null | undefined,
  loc: string[],
): Promise<void> {
  if (!orgIds || orgIds.length === 0) return;
  const wanted = [...new Set(orgIds.map(normalizeId))];
  const column = subject.type === 'org' ? 'id' : subject.type === 'enterprise' ? 'enterprise_id' : 'partner_id';
  const rows = wanted.every(isUuid)
    ? await db.selectFrom('orgs').select('id').where('id', 'in', wanted).where(column, '=', normalizeId(subject.id)).execute()
    : [];
  const within = new Set(rows.map((r) => r.id));
  const issues = orgIds.flatMap((id, index) =>
    within.has(normalizeId(id))
      ? []
      : [{ loc: [...loc, index], msg: `is not an organization of the ${subject.type} ${subject.id}`, type: 'org_outside_subject' }],
  );
  if (issues.length > 0) throw new FieldValidationError(issues);
}

/**
 * A condition on a table's (subject_type, subject_id) columns: the subject lies within an admin
 * subject (API keys and webhooks of a partner's tree, or of one enterprise and its orgs).
 */
export function subjectWithin(db: Kysely<Database>, subject: AdminSubject) {
  const type = sql.ref<string>('subject_type');
  const id = sql.ref<string>('subject_id');
  return <TB extends keyof Database>(eb: ExpressionBuilder<Database, TB>): Expression<SqlBool> => {
    if (subject.type === 'instance') return eb.and([]);
    const of = (kind: string, ids: Expression<string> | string) =>
      eb.and([eb(type, '=', kind), typeof ids === 'string' ? eb(id, '=', ids) : eb(id, 'in', ids)]);
    const orgsOf = (column: 'partner_id' | 'enterprise_id') =>
      db.selectFrom('orgs').select('id').where(column, '=', subject.id) as unknown as Expression<string>;
    if (subject.type === 'partner') {
      const enterprises = db.selectFrom('enterprises').select('id').where('partner_id', '=', subject.id) as unknown as Expression<string>;
      return eb.or([of('partner', subject.id), of('enterprise', enterprises), of('org', orgsOf('partner_id'))]);
    }
    return eb.or([of('enterprise', subject.id), of('org', orgsOf('enterprise_id'))]);
  };
}
