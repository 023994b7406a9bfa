import { z } from 'zod';

/**
 * What an API key may do, resource by resource (extensions §10). Each REST route and each tool needs one of them; messages
 * are read with their emergency (`emergencies:read`), base stations and receipts with the events (`events:read`).
 */
export const PERMISSIONS = ['emergencies:read', 'emergencies:write', 'messages:write', 'categories:read', 'users:read', 'audit:read', 'events:read'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** What a key is given: a permission, or `read` / `write` for every permission of that kind (the keys of before keep their meaning). */
export const GRANTS = ['read', 'write', ...PERMISSIONS] as const;
export type Grant = (typeof GRANTS)[number];

export const grantSchema = z
  .enum(GRANTS)
  .describe('`read` stands for every `*:read` permission, `write` for every `*:write` one; the others name one resource and action.');

/** The permissions `grants` amount to; values that are not grants give nothing. */
export function permissionsOf(grants: Iterable<string>): ReadonlySet<Permission> {
  const out = new Set<Permission>();
  for (const grant of grants) {
    if (grant === 'read' || grant === 'write') {
      for (const p of PERMISSIONS) if (p.endsWith(`:${grant}`)) out.add(p);
    } else if ((PERMISSIONS as readonly string[]).includes(grant)) {
      out.add(grant as Permission);
    }
  }
  return out;
}

/** Every permission: what an admin key and the operator may do in the orgs they reach. */
export const ALL_PERMISSIONS: ReadonlySet<Permission> = new Set(PERMISSIONS);
