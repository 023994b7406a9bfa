import type { AppContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { isUuid } from '../shared/ids.js';
import { findOrgScope, type OrgScope } from '../orgs/scope.js';
import type { Caller, Permission, Principal } from './principal.js';

export function subjectCovers(
  subject: { subjectType: string; subjectId: string; allowedOrgIds: string[] | null },
  org: OrgScope,
): boolean {
  const inTree =
    (subject.subjectType === 'org' && subject.subjectId === org.id) ||
    (subject.subjectType === 'enterprise' && subject.subjectId === org.enterpriseId) ||
    (subject.subjectType === 'partner' && subject.subjectId === org.partnerId);
  return inTree && (subject.allowedOrgIds === null || subject.allowedOrgIds.includes(org.id));
}

/**
 * The single gate of every org-scoped operation, on every surface. An org that does not exist is
 * reported exactly like one the key does not cover, so keys cannot probe for organization ids.
 */
export async function authorize(ctx: AppContext, caller: Caller, orgId: string, permission: Permission): Promise<OrgScope> {
  const principal: Principal = caller.principal;
  const org = isUuid(orgId) ? await findOrgScope(ctx.db, orgId.toLowerCase()) : null;
  if (principal.kind === 'operator') {
    if (!org) throw new AppError('org_not_covered', `Organization ${orgId} does not exist.`);
    return org;
  }
  if (!org || !subjectCovers(principal, org)) {
    throw new AppError('org_not_covered', 'This API key does not cover the requested organization.');
  }
  if (!principal.permissions.has(permission)) {
    throw new AppError('permission_denied', `This API key lacks the "${permission}" permission required for this operation.`);
  }
  return org;
}
