import { type SelectQueryBuilder, sql } from 'kysely';
import type { Database } from '../../db/types.js';
import { fieldError } from '../../errors.js';
import type { Page } from './schema.js';

/**
 * Keyset cursors: the sort key of the last row of a page, as base64url JSON. Opaque to callers;
 * a cursor that does not decode to the expected shape is a 422 on `query.cursor`.
 */
export function encodeCursor(values: (string | number)[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

export function decodeCursor<T extends ('string' | 'number')[]>(cursor: string, shape: T): (string | number)[] {
  let values: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('bad alphabet');
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw fieldError(['query', 'cursor'], 'is not a cursor returned by this endpoint', 'cursor_invalid');
  }
  if (
    !Array.isArray(values) ||
    values.length !== shape.length ||
    !values.every((v, i) => typeof v === shape[i] && (typeof v !== 'number' || Number.isFinite(v)))
  ) {
    throw fieldError(['query', 'cursor'], 'is not a cursor returned by this endpoint', 'cursor_invalid');
  }
  return values as (string | number)[];
}

/** Fetch one row more than the page to know whether a next page exists. */
export function paginate<R, T>(rows: R[], limit: number, toItem: (row: R) => T, keyOf: (row: R) => (string | number)[]) {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  return {
    items: pageRows.map(toItem),
    nextCursor: hasMore ? encodeCursor(keyOf(pageRows[pageRows.length - 1]!)) : null,
  };
}

/**
 * One page of a list ordered by a sort column then id, both ascending: rows after the cursor's pair,
 * one more than the page fetched to know whether another exists. `sort` and `id` name the columns as
 * the query sees them (qualified in a join); `keyOf` reads them back from a row for the next cursor.
 */
export async function keysetPage<DB extends Database, TB extends keyof DB, O, T>(
  query: SelectQueryBuilder<DB, TB, O>,
  order: { sort: string; id?: string; keyOf: (row: O) => [string, string] },
  params: { cursor?: string; limit: number },
  toItem: (row: O) => T,
): Promise<Page<T>> {
  const sort = sql.ref(order.sort);
  const id = sql.ref(order.id ?? 'id');
  let q = query;
  if (params.cursor) {
    const [value, lastId] = decodeCursor(params.cursor, ['string', 'string']) as string[];
    q = q.where((eb) => eb.or([eb(sort, '>', value), eb.and([eb(sort, '=', value), eb(id, '>', lastId)])]));
  }
  const rows = await q
    .orderBy(sort)
    .orderBy(id)
    .limit(params.limit + 1)
    .execute();
  return paginate(rows as O[], params.limit, toItem, order.keyOf);
}

/** Lists of credentials and subscriptions: oldest first. */
export const BY_CREATION = { sort: 'created_at', keyOf: (r: { created_at: string; id: string }): [string, string] => [r.created_at, r.id] };
