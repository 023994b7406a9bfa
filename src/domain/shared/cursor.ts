import { type SelectQueryBuilder, sql } from 'kysely';
import type { Database } from '../../db/types.js';
import { fieldError } from '../../errors.js';
import { CURSOR_INVALID_MESSAGE, INT4_MAX, MAX_CURSOR_LENGTH, type Page } from './schema.js';
import { itemsThatFit } from './page-bytes.js';

/**
 * Keyset cursors: the last row's sort key as base64url JSON, opaque to callers. Each part is checked against what its column can hold,
 * so a crafted cursor is a 422 `cursor_invalid` on both databases (PostgreSQL refuses values that SQLite would compare).
 */

/**
 * What a cursor part holds: `uuid` an id, `timestamp` a stored ISO-8601 time, `text` a sort value (no NUL, at most MAX_CURSOR_TEXT),
 * `int4` an integer fitting a PostgreSQL `integer`, `int8` a safe integer; `string` and `number` are aliases of `text` and `int4`.
 */
export type CursorPart = 'uuid' | 'timestamp' | 'text' | 'int4' | 'int8' | 'string' | 'number';
type PartValue<P extends CursorPart> = P extends 'int4' | 'int8' | 'number' ? number : string;
export type CursorValues<T extends readonly CursorPart[]> = { -readonly [K in keyof T]: T[K] extends CursorPart ? PartValue<T[K]> : never };

/** The longest text part: every name the service sorts by is far shorter. */
export const MAX_CURSOR_TEXT = 1024;

/** The cursor of each list, part by part, in its sort order. */
export const CURSOR_SHAPES = {
  /** Partners, enterprises, orgs (admin and `GET /orgs`), devices: name, then id. */
  byName: ['text', 'uuid'],
  /** Keys, admin keys, webhooks, messages, deliveries: created_at, then id. */
  byCreation: ['timestamp', 'uuid'],
  /** Emergencies (occurred_at) and audit logs (occurred_at), then id. */
  byOccurrence: ['timestamp', 'uuid'],
  /** Categories: severity, name, id. */
  categories: ['int4', 'text', 'uuid'],
  /** Users: last name, first name, id. */
  users: ['text', 'text', 'uuid'],
  /** The event feed: the stream offset of the last item. */
  streamOffset: ['int4'],
  /** An emergency's timeline: the sequence of the last item. */
  sequence: ['int4'],
} as const satisfies Record<string, readonly CursorPart[]>;

const INT4_MIN = -INT4_MAX - 1;
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

function partHolds(part: CursorPart, value: unknown): boolean {
  switch (part) {
    case 'uuid':
      return typeof value === 'string' && UUID_SHAPE.test(value);
    case 'timestamp':
      return typeof value === 'string' && ISO_TIMESTAMP.test(value);
    case 'text':
    case 'string':
      return typeof value === 'string' && value.length <= MAX_CURSOR_TEXT && !value.includes('\u0000');
    case 'int4':
    case 'number':
      return Number.isInteger(value) && (value as number) >= INT4_MIN && (value as number) <= INT4_MAX;
    case 'int8':
      return Number.isSafeInteger(value);
  }
}

function invalidCursor(field: string) {
  return fieldError(['query', field], CURSOR_INVALID_MESSAGE, 'cursor_invalid');
}

export function encodeCursor(values: (string | number)[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

/** The parts of a cursor, each checked against `shape`; anything else is a 422 `cursor_invalid` at `["query", field]`. */
export function decodeCursor<const T extends readonly CursorPart[]>(cursor: string, shape: T, field = 'cursor'): CursorValues<T> {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !BASE64URL.test(cursor)) throw invalidCursor(field);
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor(field);
  }
  if (!Array.isArray(values) || values.length !== shape.length || !shape.every((part, i) => partHolds(part, values[i]))) throw invalidCursor(field);
  return values as CursorValues<T>;
}

/**
 * Fetches one row more than the page to know whether a next page exists. A page also ends early once its items pass PAGE_BYTES
 * (extensions.md §9), its cursor then after the last item it keeps.
 */
export function paginate<R, T>(rows: R[], limit: number, toItem: (row: R) => T, keyOf: (row: R) => (string | number)[]) {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const items = pageRows.map(toItem);
  const kept = itemsThatFit(items);
  return {
    items: kept < items.length ? items.slice(0, kept) : items,
    nextCursor: hasMore || kept < items.length ? encodeCursor(keyOf(pageRows[kept - 1]!)) : null,
  };
}

/**
 * One page of a list ordered by a sort column then id, both ascending, after the cursor's pair. `sort` and `id` name the columns as
 * the query sees them (qualified in a join), `keyOf` reads them back from a row, `cursor` says what the two parts hold.
 */
export async function keysetPage<DB extends Database, TB extends keyof DB, O, T>(
  query: SelectQueryBuilder<DB, TB, O>,
  order: { sort: string; id?: string; keyOf: (row: O) => [string, string]; cursor?: readonly [CursorPart, CursorPart] },
  params: { cursor?: string; limit: number },
  toItem: (row: O) => T,
): Promise<Page<T>> {
  const sort = sql.ref(order.sort);
  const id = sql.ref(order.id ?? 'id');
  let q = query;
  if (params.cursor) {
    const [value, lastId] = decodeCursor(params.cursor, order.cursor ?? CURSOR_SHAPES.byName) as [string, string];
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
export const BY_CREATION = {
  sort: 'created_at',
  keyOf: (r: { created_at: string; id: string }): [string, string] => [r.created_at, r.id],
  cursor: CURSOR_SHAPES.byCreation,
};
