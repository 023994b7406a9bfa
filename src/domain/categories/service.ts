import type { AppContext } from '../../context.js';
import { inTransaction, isUniqueViolation, type Tx } from '../../db/connect.js';
import type { CategoryTable } from '../../db/types.js';
import { fieldError } from '../../errors.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { decodeCursor, paginate } from '../shared/cursor.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import type { Page } from '../shared/schema.js';
import { requireOrg } from '../orgs/repo.js';
import { findCategory } from './repo.js';
import { categoryCreateInput, type CategoryItem } from './schema.js';

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
  };
}

export async function insertCategory(
  tx: Tx,
  input: { orgId: string; name: string; color: string; severity: number; responseLevel: string; isSystem?: boolean },
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
  };
  await tx.db.insertInto('categories').values(row).execute();
  return row;
}

export async function createCategory(ctx: AppContext, orgId: string, raw: unknown): Promise<{ id: string }> {
  const input = categoryCreateInput.parse(raw);
  return inTransaction(ctx.db, async (tx) => {
    await requireOrg(tx, orgId);
    try {
      const row = await insertCategory(tx, { orgId, ...input });
      return { id: row.id };
    } catch (err) {
      if (isUniqueViolation(err)) throw new Error(`The organization already has a category named "${input.name}".`);
      throw err;
    }
  });
}

/**
 * Categories are never updated or deleted, so a category once seen committed stays valid for the
 * life of the process, and every instance may cache it. Misses are not cached: the category may be
 * created later. Bounded by clearing, like the org scope cache.
 */
const categoryCache = new Map<string, CategoryTable>();

function cacheKeyOf(orgId: string, selector: { categoryId?: string; categoryName?: string }): string {
  if (selector.categoryId !== undefined) return `${orgId} id ${selector.categoryId.toLowerCase()}`;
  if (selector.categoryName !== undefined) return `${orgId} name ${selector.categoryName.toLowerCase()}`;
  return `${orgId} uncategorized`;
}

/**
 * Finds the category a declare or recategorize names, by id or by case-insensitive name, within
 * the org only. `field` is where a 422 points when nothing matches.
 */
export async function resolveCategory(
  tx: Pick<Tx, 'db'> & Partial<Pick<Tx, 'afterCommit'>>,
  orgId: string,
  selector: { categoryId?: string; categoryName?: string },
): Promise<CategoryTable> {
  if (selector.categoryId !== undefined && !isUuid(selector.categoryId)) throw categoryNotFound('categoryId', selector.categoryId);
  const key = cacheKeyOf(orgId, selector);
  const cached = categoryCache.get(key);
  if (cached) return cached;
  const row = await findCategory(tx.db, orgId, selector);
  if (row) {
    // Cached only once the reading transaction committed, so a category created in a transaction
    // that later rolls back is never served; a read outside any transaction saw committed rows only.
    const keep = () => {
      if (categoryCache.size > 100_000) categoryCache.clear();
      categoryCache.set(key, row);
    };
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
  await authorize(ctx, caller, orgId, 'read');
  let query = ctx.db.db.selectFrom('categories').selectAll().where('org_id', '=', orgId);
  if (params.cursor) {
    const [severity, name, id] = decodeCursor(params.cursor, ['number', 'string', 'string']) as [number, string, string];
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
