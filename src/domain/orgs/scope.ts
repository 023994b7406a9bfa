import type { DbHandle } from '../../db/connect.js';

export interface OrgScope {
  id: string;
  enterpriseId: string;
  partnerId: string;
}

// An organization never moves to another enterprise or partner, so its place in the hierarchy is
// cached for the life of the process; unknown ids are not cached (they may be created later).
const scopes = new Map<string, OrgScope>();

/** The org's place when already cached (no database read). */
export function cachedOrgScope(orgId: string): OrgScope | undefined {
  return scopes.get(orgId);
}

export async function findOrgScope(handle: Pick<DbHandle, 'db'>, orgId: string): Promise<OrgScope | null> {
  const cached = scopes.get(orgId);
  if (cached) return cached;
  const row = await handle.db.selectFrom('orgs').select(['id', 'enterprise_id', 'partner_id']).where('id', '=', orgId).executeTakeFirst();
  if (!row) return null;
  const scope = { id: row.id, enterpriseId: row.enterprise_id, partnerId: row.partner_id };
  if (scopes.size > 100_000) scopes.clear();
  scopes.set(orgId, scope);
  return scope;
}
