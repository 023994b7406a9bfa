import { fieldError } from '../../errors.js';

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
