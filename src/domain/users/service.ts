import type { WriteOptions } from '../../db/unit-of-work.js';
import type { AppContext } from '../../context.js';
import { inTransaction, type Tx } from '../../db/connect.js';
import { AppError } from '../../errors.js';
import { requireReach } from '../access/admin-scope.js';
import { placeOfOrg } from '../tenancy/places.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { CURSOR_SHAPES, decodeCursor, paginate } from '../shared/cursor.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import type { Page } from '../shared/schema.js';
import { userCreateInput, type UserItem, userUpdateInput } from './schema.js';

/** Adds a user to an organization; the email is unique within it (409 conflict). */
export async function createUser(ctx: AppContext, caller: Caller, orgId: string, raw: unknown, write: WriteOptions = {}): Promise<UserItem> {
  const input = userCreateInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      await refuseTakenEmail(tx, place.orgId, input.email, null);
      const id = newId();
      await tx.db
        .insertInto('users')
        .values({
          id,
          org_id: place.orgId,
          first_name: input.firstName,
          last_name: input.lastName,
          email: input.email,
          phone_number: input.phoneNumber ?? null,
          role: input.role,
          access_level: input.accessLevel,
          status: input.status,
          profile_photo_url: null,
          owned_device_id: null,
          owned_device_name: null,
          created_at: nowIso(),
          last_login_at: null,
        })
        .execute();
      return loadUser(tx, place.orgId, id);
    },
    write.idempotency,
  );
}

/** Changes a user's names, email, phone, role, access level or status. */
export async function updateUser(ctx: AppContext, caller: Caller, orgId: string, userId: string, raw: unknown, write: WriteOptions = {}): Promise<UserItem> {
  const input = userUpdateInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      const id = isUuid(userId) ? userId.toLowerCase() : '';
      const existing = await tx.db.selectFrom('users').select('id').where('org_id', '=', place.orgId).where('id', '=', id).executeTakeFirst();
      if (!existing) throw new AppError('not_found', `No user ${userId} in this organization.`);
      if (input.email !== undefined) await refuseTakenEmail(tx, place.orgId, input.email, id);
      const changes = {
        ...(input.firstName !== undefined ? { first_name: input.firstName } : {}),
        ...(input.lastName !== undefined ? { last_name: input.lastName } : {}),
        ...(input.email !== undefined ? { email: input.email } : {}),
        ...(input.phoneNumber !== undefined ? { phone_number: input.phoneNumber } : {}),
        ...(input.role !== undefined ? { role: input.role } : {}),
        ...(input.accessLevel !== undefined ? { access_level: input.accessLevel } : {}),
        ...(input.status !== undefined ? { status: input.status } : {}),
      };
      await tx.db.updateTable('users').set(changes).where('org_id', '=', place.orgId).where('id', '=', id).execute();
      return loadUser(tx, place.orgId, id);
    },
    write.idempotency,
  );
}

async function refuseTakenEmail(tx: Tx, orgId: string, email: string, exceptId: string | null): Promise<void> {
  const taken = await tx.db
    .selectFrom('users')
    .select('id')
    .where('org_id', '=', orgId)
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .executeTakeFirst();
  if (taken && taken.id !== exceptId) throw new AppError('conflict', `The organization already has a user with email ${email}.`, { userId: taken.id });
}

function usersWithTree(db: Tx['db']) {
  return db
    .selectFrom('users as u')
    .innerJoin('orgs as o', 'o.id', 'u.org_id')
    .innerJoin('enterprises as e', 'e.id', 'o.enterprise_id')
    .innerJoin('partners as p', 'p.id', 'o.partner_id')
    .selectAll('u')
    .select(['e.id as enterprise_id', 'e.name as enterprise_name', 'p.id as partner_id', 'p.name as partner_name']);
}

async function loadUser(tx: Tx, orgId: string, id: string): Promise<UserItem> {
  return toUserItem(await usersWithTree(tx.db).where('u.org_id', '=', orgId).where('u.id', '=', id).executeTakeFirstOrThrow());
}

type UserRow = Awaited<ReturnType<ReturnType<typeof usersWithTree>['executeTakeFirstOrThrow']>>;

function toUserItem(r: UserRow): UserItem {
  return {
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
  };
}

export async function listUsers(ctx: AppContext, caller: Caller, orgId: string, params: { cursor?: string; limit: number }): Promise<Page<UserItem>> {
  const org = await authorize(ctx, caller, orgId, 'users:read');
  let query = usersWithTree(ctx.db.db).where('u.org_id', '=', org.id);
  if (params.cursor) {
    const [last, first, id] = decodeCursor(params.cursor, CURSOR_SHAPES.users);
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
  return paginate(rows, params.limit, toUserItem, (r) => [r.last_name, r.first_name, r.id]);
}
