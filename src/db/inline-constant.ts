import { type RawBuilder, sql } from 'kysely';

/**
 * A constant written into the statement's text instead of bound as a parameter: SQLite uses a partial index
 * (such as one `where status = 'pending'`) only when the condition's value is in the text. For the code's own
 * constants only, never for input.
 */
export function inlineConstant<T extends string>(value: T): RawBuilder<T> {
  return sql.lit(value);
}
