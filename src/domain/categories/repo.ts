import type { Kysely } from 'kysely';
import type { CategoryTable, Database } from '../../db/types.js';

export const UNCATEGORIZED = { name: 'Uncategorized', color: '#9E9E9E', severity: 0, responseLevel: 'none' } as const;

/** The category a selector names within the org: by id, by case-insensitive name, or the org's Uncategorized. */
export function findCategory(
  db: Kysely<Database>,
  orgId: string,
  selector: { categoryId?: string; categoryName?: string },
): Promise<CategoryTable | undefined> {
  const query = db.selectFrom('categories').selectAll().where('org_id', '=', orgId);
  if (selector.categoryId !== undefined) return query.where('id', '=', selector.categoryId.toLowerCase()).executeTakeFirst();
  if (selector.categoryName !== undefined) {
    return query.where((eb) => eb(eb.fn('lower', ['name']), '=', selector.categoryName!.toLowerCase())).executeTakeFirst();
  }
  return query.where('is_system', '=', 1).where('name', '=', UNCATEGORIZED.name).executeTakeFirst();
}
