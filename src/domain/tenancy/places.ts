import { type Expression, type Kysely, type SqlBool, sql } from 'kysely';
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
export function subjectWithin(subject: AdminSubject): Expression<SqlBool> {
  if (subject.type === 'instance') return sql<SqlBool>`1 = 1`;
  if (subject.type === 'partner') {
    return sql<SqlBool>`((subject_type = 'partner' and subject_id = ${subject.id})
      or (subject_type = 'enterprise' and subject_id in (select id from enterprises where partner_id = ${subject.id}))
      or (subject_type = 'org' and subject_id in (select id from orgs where partner_id = ${subject.id})))`;
  }
  return sql<SqlBool>`((subject_type = 'enterprise' and subject_id = ${subject.id})
    or (subject_type = 'org' and subject_id in (select id from orgs where enterprise_id = ${subject.id})))`;
}
