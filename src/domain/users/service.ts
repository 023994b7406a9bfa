import type { AppContext } from '../../context.js';
import { inTransaction } from '../../db/connect.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { decodeCursor, paginate } from '../shared/cursor.js';
import { newId, nowIso } from '../shared/ids.js';
import type { Page } from '../shared/schema.js';
import { requireOrg } from '../orgs/repo.js';
import { userCreateInput, type UserItem } from './schema.js';

export async function createUser(ctx: AppContext, orgId: string, raw: unknown): Promise<{ id: string }> {
  const input = userCreateInput.parse(raw);
  return inTransaction(ctx.db, async (tx) => {
    await requireOrg(tx, orgId);
    const id = newId();
    await tx.db
      .insertInto('users')
      .values({
        id,
        org_id: orgId,
        first_name: input.firstName,
        last_name: input.lastName,
        email: input.email,
        phone_number: input.phoneNumber ?? null,
        role: input.role,
        access_level: input.accessLevel,
        status: 'active',
        profile_photo_url: null,
        owned_device_id: null,
        owned_device_name: null,
        created_at: nowIso(),
        last_login_at: null,
      })
      .execute();
    return { id };
  });
}

export async function listUsers(ctx: AppContext, caller: Caller, orgId: string, params: { cursor?: string; limit: number }): Promise<Page<UserItem>> {
  await authorize(ctx, caller, orgId, 'read');
  let query = ctx.db.db
    .selectFrom('users as u')
    .innerJoin('orgs as o', 'o.id', 'u.org_id')
    .innerJoin('enterprises as e', 'e.id', 'o.enterprise_id')
    .innerJoin('partners as p', 'p.id', 'o.partner_id')
    .selectAll('u')
    .select(['e.id as enterprise_id', 'e.name as enterprise_name', 'p.id as partner_id', 'p.name as partner_name'])
    .where('u.org_id', '=', orgId);
  if (params.cursor) {
    const [last, first, id] = decodeCursor(params.cursor, ['string', 'string', 'string']) as string[];
    query = query.where((eb) =>
      eb.or([
        eb('u.last_name', '>', last!),
        eb.and([eb('u.last_name', '=', last!), eb('u.first_name', '>', first!)]),
        eb.and([eb('u.last_name', '=', last!), eb('u.first_name', '=', first!), eb('u.id', '>', id!)]),
      ]),
    );
  }
  const rows = await query
    .orderBy('u.last_name')
    .orderBy('u.first_name')
    .orderBy('u.id')
    .limit(params.limit + 1)
    .execute();
  return paginate(
    rows,
    params.limit,
    (r) => ({
      userId: r.id,
      role: r.role as UserItem['role'],
      firstName: r.first_name,
      lastName: r.last_name,
      email: r.email,
      phoneNumber: r.phone_number,
      accessLevel: r.access_level as UserItem['accessLevel'],
      status: r.status as UserItem['status'],
      profilePhotoUrl: r.profile_photo_url,
      ownedDeviceId: r.owned_device_id,
      ownedDeviceName: r.owned_device_name,
      enterpriseId: r.enterprise_id,
      enterpriseName: r.enterprise_name,
      partnerId: r.partner_id,
      partnerName: r.partner_name,
      createdAt: r.created_at,
      lastLoginAt: r.last_login_at,
    }),
    (r) => [r.last_name, r.first_name, r.id],
  );
}
