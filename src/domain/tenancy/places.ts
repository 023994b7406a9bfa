import { type Expression, type ExpressionBuilder, type Kysely, type SqlBool, sql } from 'kysely';
import type { Database } from '../../db/types.js';
import { AppError } from '../../errors.js';
import type { Place } from '../access/admin-scope.js';
import type { AdminSubject } from '../access/principal.js';
import { isUuid } from '../shared/ids.js';

/**
 * Where a partner, enterprise or org sits, for the admin gate. An id that names nothing is a 404
 * `not_found` (with the kind named), whatever the caller's subject.
 */

export async function placeOfPartner(db: Kysely<Database>, partnerId: string): Promise<Place> {
  const row = isUuid(partnerId) ? await db.selectFrom('partners').select('id').where('id', '=', partnerId.toLowerCase()).executeTakeFirst() : undefined;
  if (!row) throw new AppError('not_found', `No partner ${partnerId}.`);
  return { partnerId: row.id };
}

export async function placeOfEnterprise(db: Kysely<Database>, enterpriseId: string): Promise<Place> {
  const row = isUuid(enterpriseId)
    ? await db.selectFrom('enterprises').select(['id', 'partner_id']).where('id', '=', enterpriseId.toLowerCase()).executeTakeFirst()
    : undefined;
  if (!row) throw new AppError('not_found', `No enterprise ${enterpriseId}.`);
  return { partnerId: row.partner_id, enterpriseId: row.id };
}

export async function placeOfOrg(db: Kysely<Database>, orgId: string): Promise<Place & { orgId: string; enterpriseId: string }> {
  const row = isUuid(orgId)
    ? await db.selectFrom('orgs').select(['id', 'enterprise_id', 'partner_id']).where('id', '=', orgId.toLowerCase()).executeTakeFirst()
    : undefined;
  if (!row) throw new AppError('not_found', `No organization ${orgId}.`);
  return { partnerId: row.partner_id, enterpriseId: row.enterprise_id, orgId: row.id };
}

/** The place of an API-key, webhook or admin-key subject. */
export function placeOfSubject(db: Kysely<Database>, type: 'partner' | 'enterprise' | 'org', id: string): Promise<Place> {
  if (type === 'partner') return placeOfPartner(db, id);
  if (type === 'enterprise') return placeOfEnterprise(db, id);
  return placeOfOrg(db, id);
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
