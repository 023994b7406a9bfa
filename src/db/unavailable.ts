import { AppError } from '../errors.js';

/** What a client is told to wait before retrying while the database is unavailable. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

/** The 503 of a request that met an unavailable database. */
export function databaseUnavailable(): AppError {
  return new AppError(
    'unavailable',
    `The database is unavailable right now; retry after ${DATABASE_RETRY_AFTER_SECONDS} s. A write may or may not have been made: retry it with the same Idempotency-Key, or read it back first.`,
  );
}

/**
 * Whether the database cannot serve right now (unreachable, restarting, past the timeouts, locked, out of disk),
 * rather than a fault of the request: answered 503 with Retry-After and logged once per outage.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  // Sockets: the server refused, reset or never answered the connection.
  if (/^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN)$/.test(code)) return true;
  // PostgreSQL: connection exceptions (08), shutdown or startup (57P01-3), statement_timeout (57014), out of resources (53).
  if (/^(08...|57P0[1-3]|57014|53...)$/.test(code)) return true;
  // SQLite: lock held past busy_timeout, disk full or failing, file not openable or writable.
  if (/^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|PROTOCOL)/.test(code)) return true;
  // The pg driver and pool report these without a code.
  return /^(timeout exceeded when trying to connect|Connection terminated|Query read timeout|Client has encountered a connection error|Connection terminated due to connection timeout)/.test(
    message,
  );
}
