import { type DatabaseTimeouts, type DbHandle, DEFAULT_TIMEOUTS } from './handle.js';
import { openPostgres } from './postgres/open.js';
import { openSqlite } from './sqlite/open.js';
import type { IdempotencyScope } from './idempotency.js';
import type { UnitOfWork } from './unit-of-work.js';

export type { DatabaseTimeouts, DbHandle, Dialect, FailureReport, SqliteStatements } from './handle.js';
export { DatabaseDirectoryMissingError, DatabaseMissingError } from './handle.js';

/**
 * `create: false` refuses a SQLite file that does not exist (DatabaseMissingError) instead of creating it.
 * `poolSize` caps the PostgreSQL pool's connections; SQLite has one connection and ignores it.
 */
export function openDatabase(url: string, timeouts: DatabaseTimeouts = DEFAULT_TIMEOUTS, options: { create?: boolean; poolSize?: number } = {}): DbHandle {
  return url.startsWith('sqlite:')
    ? openSqlite(url.slice('sqlite:'.length), timeouts, options.create ?? true)
    : openPostgres(url, timeouts, { poolSize: options.poolSize });
}

export type Tx = UnitOfWork;

/** Runs `fn` as one unit of work; with an Idempotency-Key scope, its answer is stored in the same transaction. */
export function inTransaction<T>(handle: DbHandle, fn: (tx: Tx) => Promise<T>, idempotency?: IdempotencyScope): Promise<T> {
  return handle.unitOfWork(fn, idempotency);
}

export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
