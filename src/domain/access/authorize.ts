import type { AppContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { isUuid } from '../shared/ids.js';
import { cachedOrgScope, findOrgScope, type OrgScope } from '../orgs/scope.js';
import { subjectReaches } from './admin-scope.js';
import type { Caller, Permission, Principal } from './principal.js';

export function subjectCovers(subject: { subjectType: string; subjectId: string; allowedOrgIds: string[] | null }, org: OrgScope): boolean {
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
  const org = isUuid(orgId) ? await findOrgScope(ctx.db, orgId.toLowerCase()) : null;
  return admit(caller.principal, org, orgId, permission);
}

/** `authorize` without waiting, for hot read paths: the same verdict when the org's place is cached, undefined when it must be read. */
export function authorizeCached(caller: Caller, orgId: string, permission: Permission): OrgScope | undefined {
  if (!isUuid(orgId)) return admit(caller.principal, null, orgId, permission);
  const org = cachedOrgScope(orgId.toLowerCase());
  return org && admit(caller.principal, org, orgId, permission);
}

/**
 * A permission beyond the operation's own, for part of its answer: e.g. a write-only key resolving an emergency that
 * was resolved before may not read the record it would be answered with. `why` ends the message ("to ...").
 */
export function requirePermission(caller: Caller, permission: Permission, why: string): void {
  const p = caller.principal;
  if (p.kind === 'api_key' && !p.permissions.has(permission)) {
    throw new AppError('permission_denied', `This API key lacks the "${permission}" permission required ${why}.`);
  }
}

function admit(principal: Principal, org: OrgScope | null, orgId: string, permission: Permission): OrgScope {
  if (principal.kind === 'operator') {
    if (!org) throw new AppError('org_not_covered', `Organization ${orgId} does not exist.`);
    return org;
  }
  if (principal.kind === 'admin_key') {
    // An admin key reads and writes every org beneath its subject: it could mint such an API key anyway.
    if (!org || !subjectReaches(principal.subject, org)) throw new AppError('org_not_covered', 'This admin key does not cover the requested organization.');
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
