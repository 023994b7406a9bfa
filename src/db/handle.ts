import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { IdempotencyScope } from './idempotency.js';
import type { Database } from './types.js';
import type { CommittedEvent, UnitOfWork, Writes } from './unit-of-work.js';

export type Dialect = 'sqlite' | 'postgres';

/** How long the database may keep a caller waiting before the call fails (and the request gets a 503). */
export interface DatabaseTimeouts {
  /** A statement (PostgreSQL, enforced by the server and by the client for a server that stops answering), or a lock wait (SQLite). */
  statementTimeoutMs: number;
  /** Getting a connection from the pool, connecting included (PostgreSQL). */
  connectTimeoutMs: number;
}

export const DEFAULT_TIMEOUTS: DatabaseTimeouts = { statementTimeoutMs: 5000, connectTimeoutMs: 2000 };

/** A SQLite file that is not there, opened by a command that must not create one (the server would not use a new one). */
export class DatabaseMissingError extends Error {
  constructor(readonly location: string) {
    super(`No database at ${location}.`);
  }
}

/**
 * A SQLite path whose directory does not exist: most often a typo, which would otherwise start an empty database beside the
 * real one. Only the default path's directory is created.
 */
export class DatabaseDirectoryMissingError extends Error {
  constructor(
    readonly location: string,
    readonly directory: string,
  ) {
    super(`The directory of ${location} does not exist: ${directory}.`);
  }
}

/** A failure the database handle survived, with what it did about it. */
export type FailureReport = (err: Error, consequence: string) => void;

/**
 * The SQLite connection's statement cache, to run short statements without the overhead of Kysely's driver.
 * Only where no other transaction can be open on it: inside a group-commit job, or while group commit is idle.
 */
export interface SqliteStatements {
  prepare(source: string): { reader: boolean; all(params: readonly unknown[]): unknown[]; run(params: readonly unknown[]): unknown };
}

/**
 * Storage as a service sees it: Kysely for reads and plain changes, units of work for an operation's writes,
 * so each dialect keeps its speed machinery (group commit, batching, offset numbering) behind it.
 */
export interface DbHandle {
  db: Kysely<Database>;
  dialect: Dialect;
  /** The connection string without any embedded secret, safe for logs. */
  describe: string;
  /** One transaction: `fn`'s reads at once, its recorded writes when it returns; an Idempotency-Key's answer commits with it. */
  unitOfWork<T>(fn: (uow: UnitOfWork) => Promise<T>, idempotency?: IdempotencyScope): Promise<T>;
  /**
   * Writes what `record` records without reading, so an org's concurrent units can share one statement; resolves
   * once committed. `result` is the answer stored under the request's Idempotency-Key.
   */
  commit(record: (writes: Writes) => void, result?: unknown, idempotency?: IdempotencyScope): Promise<void>;
  /** Who is told, after each commit, of every org whose event stream advanced (the process's event bus). */
  onCommitted(listener: (event: CommittedEvent) => void): void;
  /** Where failures the handle survives on its own (checkpoint thread, idle connection lost) are reported; unreported until set. */
  reportFailures(report: FailureReport): void;
  /** For PostgreSQL: a fresh client config so LISTEN can hold its own connection. */
  pgConfig?: pg.ClientConfig;
  /** For PostgreSQL: the pool under `db`, for named (server-side prepared) statements outside transactions. */
  pgPool?: pg.Pool;
  /** For PostgreSQL: the schema named in the URL, if any. */
  pgSchema?: string;
  /** For PostgreSQL: wakes other instances after each commit (postgres/notifier.ts); tests set `dropping` to lose every wake-up. */
  pgNotifier?: { dropping: boolean; readonly senderId: string; readonly listenerApplicationName: string };
  /** For PostgreSQL: a handle of its own without statement timeouts, for migrations (closed by the caller). */
  unbounded?(): DbHandle;
  /** For SQLite files (absent for :memory:). */
  sqlitePath?: string;
  /** For SQLite files: checkpoint the WAL from a background thread instead of inside commits. */
  offloadCheckpoints?(): void;
  /** For SQLite: the connection's prepared statements (see `SqliteStatements`); null while a transaction is open on it. */
  sqliteDirect?(): SqliteStatements | null;
  close(): Promise<void>;
}
