import { z } from 'zod';
import type { AppContext } from '../../context.js';
import type { Caller, Principal } from '../access/principal.js';
import { keysetPage } from '../shared/cursor.js';
import { type Page, pageOf, uuid } from '../shared/schema.js';

export const coveredOrg = z
  .object({ orgId: uuid, name: z.string(), enterpriseId: uuid, enterpriseName: z.string(), partnerId: uuid, partnerName: z.string() })
  .meta({ id: 'Organization' });
export type CoveredOrg = z.infer<typeof coveredOrg>;
export const coveredOrgPage = pageOf(coveredOrg);

/**
 * The organizations a caller's key covers: its subject's tree, narrowed by allowedOrgIds (an admin
 * key: everything beneath its subject). Null when the key covers none, so no query is needed.
 */
function coveredOrgsQuery(ctx: AppContext, principal: Principal) {
  let query = ctx.db.db.selectFrom('orgs as o').innerJoin('enterprises as e', 'e.id', 'o.enterprise_id').innerJoin('partners as p', 'p.id', 'o.partner_id');
  if (principal.kind === 'admin_key' && principal.subject.type !== 'instance') {
    query = query.where(principal.subject.type === 'partner' ? 'o.partner_id' : 'o.enterprise_id', '=', principal.subject.id);
  } else if (principal.kind === 'api_key') {
    const column = principal.subjectType === 'org' ? 'o.id' : principal.subjectType === 'enterprise' ? 'o.enterprise_id' : 'o.partner_id';
    query = query.where(column, '=', principal.subjectId);
    if (principal.allowedOrgIds !== null) {
      if (principal.allowedOrgIds.length === 0) return null;
      query = query.where('o.id', 'in', principal.allowedOrgIds);
    }
  }
  return query;
}

/**
 * `GET /orgs`: the organizations the caller's key covers, by name then id. A partner key discovers
 * its orgs without asking an operator.
 */
export async function listCoveredOrgs(ctx: AppContext, caller: Caller, params: { cursor?: string; limit: number }): Promise<Page<CoveredOrg>> {
  const query = coveredOrgsQuery(ctx, caller.principal);
  if (!query) return { items: [], nextCursor: null };
  const rows = query.select(['o.id', 'o.name', 'e.id as enterprise_id', 'e.name as enterprise_name', 'p.id as partner_id', 'p.name as partner_name']);
  return keysetPage(rows, { sort: 'o.name', id: 'o.id', keyOf: (r) => [r.name, r.id] }, params, (r) => ({
    orgId: r.id,
    name: r.name,
    enterpriseId: r.enterprise_id,
    enterpriseName: r.enterprise_name,
    partnerId: r.partner_id,
    partnerName: r.partner_name,
  }));
}

/** How many organizations the caller's key covers. */
export async function countCoveredOrgs(ctx: AppContext, caller: Caller): Promise<number> {
  const query = coveredOrgsQuery(ctx, caller.principal);
  if (!query) return 0;
  const row = await query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}
