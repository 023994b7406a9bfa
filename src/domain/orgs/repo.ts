import type { Tx } from '../../db/connect.js';

/** The org row, for operator commands that must name an existing org (an unknown id is a usage error there). */
export async function requireOrg(tx: Tx, orgId: string) {
  const row = await tx.db
    .selectFrom('orgs')
    .select(['id', 'enterprise_id', 'partner_id', 'name', 'created_at', 'ack_deadline_seconds'])
    .where('id', '=', orgId)
    .executeTakeFirst();
  if (!row) throw new Error(`No organization with id ${orgId}.`);
  return row;
}
