import type { WriteOptions } from '../../db/unit-of-work.js';
import type { AppContext } from '../../context.js';
import { inTransaction, type Tx } from '../../db/connect.js';
import type { CategoryTable } from '../../db/types.js';
import { LRUCache } from 'lru-cache';
import { AppError, fieldError } from '../../errors.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { CURSOR_SHAPES, decodeCursor, paginate } from '../shared/cursor.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import type { Page } from '../shared/schema.js';
import { requireReach } from '../access/admin-scope.js';
import { placeOfOrg } from '../tenancy/places.js';
import { findCategory } from './repo.js';
import { categoryCreateInput, type CategoryItem, categoryUpdateInput } from './schema.js';

export { UNCATEGORIZED } from './repo.js';

export function toCategoryItem(row: CategoryTable): CategoryItem {
  return {
    categoryId: row.id,
    name: row.name,
    color: row.color,
    responseLevel: row.response_level as CategoryItem['responseLevel'],
    severity: row.severity,
    isSystem: row.is_system === 1,
    createdAt: row.created_at,
    ackDeadlineSeconds: row.ack_deadline_seconds === null ? null : Number(row.ack_deadline_seconds),
  };
}

export async function insertCategory(
  tx: Tx,
  input: { orgId: string; name: string; color: string; severity: number; responseLevel: string; isSystem?: boolean; ackDeadlineSeconds?: number | null },
): Promise<CategoryTable> {
  const row: CategoryTable = {
    id: newId(),
    org_id: input.orgId,
    name: input.name,
    color: input.color,
    response_level: input.responseLevel,
    severity: input.severity,
    is_system: input.isSystem ? 1 : 0,
    created_at: nowIso(),
    ack_deadline_seconds: input.ackDeadlineSeconds ?? null,
  };
  await tx.db.insertInto('categories').values(row).execute();
  return row;
}

/** Creates a category of an organization (name unique in the org, case-insensitively: else 409 conflict). */
export async function createCategory(ctx: AppContext, caller: Caller, orgId: string, raw: unknown, write: WriteOptions = {}): Promise<CategoryItem> {
  const input = categoryCreateInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      await refuseTakenName(tx, place.orgId, input.name, null);
      return toCategoryItem(await insertCategory(tx, { orgId: place.orgId, ...input }));
    },
    write.idempotency,
  );
}

async function refuseTakenName(tx: Tx, orgId: string, name: string, exceptId: string | null): Promise<void> {
  const taken = await findCategory(tx.db, orgId, { categoryName: name });
  if (taken && taken.id !== exceptId)
    throw new AppError('conflict', `The organization already has a category named "${taken.name}".`, { categoryId: taken.id });
}

/**
 * Changes a category's name, color, severity, response level or acknowledgement deadline; Uncategorized, every emergency's
 * fallback, is immutable (409). Emergencies keep the category as of their last change; other instances see the change when
 * their cache entry expires. A new deadline applies to events written from then on.
 */
export async function updateCategory(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  categoryId: string,
  raw: unknown,
  write: WriteOptions = {},
): Promise<CategoryItem> {
  const input = categoryUpdateInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      const row = isUuid(categoryId) ? await findCategory(tx.db, place.orgId, { categoryId }) : undefined;
      if (!row) throw new AppError('not_found', `No category ${categoryId} in this organization.`);
      if (row.is_system === 1) throw new AppError('conflict', `${row.name} is the system category and cannot be changed.`);
      if (input.name !== undefined) await refuseTakenName(tx, place.orgId, input.name, row.id);
      const changes = {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.color !== undefined ? { color: input.color } : {}),
        ...(input.severity !== undefined ? { severity: input.severity } : {}),
        ...(input.responseLevel !== undefined ? { response_level: input.responseLevel } : {}),
        ...(input.ackDeadlineSeconds !== undefined ? { ack_deadline_seconds: input.ackDeadlineSeconds } : {}),
      };
      if (Object.keys(changes).length > 0)
        await tx.db.updateTable('categories').set(changes).where('id', '=', row.id).where('org_id', '=', place.orgId).execute();
      tx.afterCommit(() => forgetCategories(place.orgId));
      return toCategoryItem({ ...row, ...changes });
    },
    write.idempotency,
  );
}

/**
 * Committed categories are cached briefly per instance, since every declare names one; a change here is forgotten at once,
 * elsewhere on expiry. Misses are not cached: the category may be created later.
 */
const CATEGORY_CACHE_TTL_MS = 5_000;
// Entries carry their own read time (as the key verifier's do): lru-cache's TTL adds clock bookkeeping to every get, on the
// declare's hot path.
const categoryCache = new LRUCache<string, { row: CategoryTable; readAt: number }>({ max: 100_000 });

function forgetCategories(orgId: string): void {
  for (const key of categoryCache.keys()) if (key.startsWith(`${orgId} `)) categoryCache.delete(key);
}

function cacheKeyOf(orgId: string, selector: { categoryId?: string; categoryName?: string }): string {
  if (selector.categoryId !== undefined) return `${orgId} id ${selector.categoryId.toLowerCase()}`;
  if (selector.categoryName !== undefined) return `${orgId} name ${selector.categoryName.toLowerCase()}`;
  return `${orgId} uncategorized`;
}

/** The category a declare or recategorize names, by id or case-insensitive name, within the org only; `field` is where a 422 points. */
export async function resolveCategory(
  tx: Pick<Tx, 'db'> & Partial<Pick<Tx, 'afterCommit'>>,
  orgId: string,
  selector: { categoryId?: string; categoryName?: string },
): Promise<CategoryTable> {
  if (selector.categoryId !== undefined && !isUuid(selector.categoryId)) throw categoryNotFound('categoryId', selector.categoryId);
  const key = cacheKeyOf(orgId, selector);
  const cached = categoryCache.get(key);
  if (cached && Date.now() - cached.readAt <= CATEGORY_CACHE_TTL_MS) return cached.row;
  const row = await findCategory(tx.db, orgId, selector);
  if (row) {
    // Cached only once the reading transaction committed, so a category created in a transaction
    // that later rolls back is never served; a read outside any transaction saw committed rows only.
    const keep = () => void categoryCache.set(key, { row, readAt: Date.now() });
    if (tx.afterCommit) tx.afterCommit(keep);
    else keep();
    return row;
  }
  if (selector.categoryId !== undefined) throw categoryNotFound('categoryId', selector.categoryId);
  if (selector.categoryName !== undefined) throw categoryNotFound('categoryName', selector.categoryName);
  throw new Error(`Organization ${orgId} has no Uncategorized category.`);
}

function categoryNotFound(field: 'categoryId' | 'categoryName', value: string) {
  return fieldError(
    ['body', field],
    `No category ${field === 'categoryId' ? 'with id' : 'named'} "${value}" in this organization; list the categories to see the valid ones.`,
    'category_not_found',
  );
}

export async function listCategories(ctx: AppContext, caller: Caller, orgId: string, params: { cursor?: string; limit: number }): Promise<Page<CategoryItem>> {
  await authorize(ctx, caller, orgId, 'categories:read');
  let query = ctx.db.db.selectFrom('categories').selectAll().where('org_id', '=', orgId);
  if (params.cursor) {
    const [severity, name, id] = decodeCursor(params.cursor, CURSOR_SHAPES.categories);
    query = query.where((eb) =>
      eb.or([
        eb('severity', '<', severity),
        eb.and([eb('severity', '=', severity), eb('name', '>', name)]),
        eb.and([eb('severity', '=', severity), eb('name', '=', name), eb('id', '>', id)]),
      ]),
    );
  }
  const rows = await query
    .orderBy('severity', 'desc')
    .orderBy('name')
    .orderBy('id')
    .limit(params.limit + 1)
    .execute();
  return paginate(rows, params.limit, toCategoryItem, (r) => [r.severity, r.name, r.id]);
}
