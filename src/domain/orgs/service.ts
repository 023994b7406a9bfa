import type { AppContext } from '../../context.js';
import { inTransaction, type Tx } from '../../db/connect.js';
import { newId, nowIso } from '../shared/ids.js';
import { insertCategory, UNCATEGORIZED } from '../categories/service.js';

async function requireRow(tx: Tx, table: 'partners' | 'enterprises', id: string) {
  const row = await tx.db.selectFrom(table).selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new Error(`No ${table === 'partners' ? 'partner' : 'enterprise'} with id ${id}.`);
  return row;
}

export async function createPartner(ctx: AppContext, input: { name: string }): Promise<{ id: string }> {
  const id = newId();
  await ctx.db.db.insertInto('partners').values({ id, name: input.name, created_at: nowIso() }).execute();
  return { id };
}

export async function createEnterprise(ctx: AppContext, input: { partnerId: string; name: string }): Promise<{ id: string }> {
  return inTransaction(ctx.db, async (tx) => {
    await requireRow(tx, 'partners', input.partnerId);
    const id = newId();
    await tx.db.insertInto('enterprises').values({ id, partner_id: input.partnerId, name: input.name, created_at: nowIso() }).execute();
    return { id };
  });
}

/** Creates an organization together with its system category Uncategorized. */
export async function createOrg(ctx: AppContext, input: { enterpriseId: string; name: string }): Promise<{ id: string }> {
  return inTransaction(ctx.db, async (tx) => {
    const enterprise = await requireRow(tx, 'enterprises', input.enterpriseId);
    const id = newId();
    await tx.db
      .insertInto('orgs')
      .values({
        id,
        enterprise_id: input.enterpriseId,
        partner_id: (enterprise as { partner_id: string }).partner_id,
        name: input.name,
        created_at: nowIso(),
        event_offset: 0,
        pruned_offset: 0,
      })
      .execute();
    await insertCategory(tx, { orgId: id, ...UNCATEGORIZED, isSystem: true });
    return { id };
  });
}
