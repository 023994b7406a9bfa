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

/** A failure the database handle survived, with what it did about it. */
export type FailureReport = (err: Error, consequence: string) => void;

/**
 * The statement cache of the one SQLite connection, to run a prepared query on it directly rather
 * than through Kysely's driver, whose promise hops cost more than the short statements themselves.
 * Only where no other transaction can be open on the connection: inside a group-commit job (which
 * holds the batch's transaction), or outside one while group commit is idle.
 */
export interface SqliteStatements {
  prepare(source: string): { reader: boolean; all(params: readonly unknown[]): unknown[]; run(params: readonly unknown[]): unknown };
}

/**
 * The storage a service talks to: dialect-neutral Kysely for reads and plain changes, and units of
 * work for the writes of an operation. Each dialect's adapter (src/db/sqlite, src/db/postgres) keeps
 * its speed machinery behind this: group commit, batching of an org's concurrent declares, prepared
 * statements and the numbering of event offsets.
 */
export interface DbHandle {
  db: Kysely<Database>;
  dialect: Dialect;
  /** The connection string without any embedded secret, safe for logs. */
  describe: string;
  /**
   * Runs `fn` as one transaction: its reads at once, the writes it records when it returns, then the
   * commit; `afterCommit` callbacks and wake-ups run once committed. When the request has an
   * Idempotency-Key, the answer made of `fn`'s value is stored in the same transaction.
   */
  unitOfWork<T>(fn: (uow: UnitOfWork) => Promise<T>, idempotency?: IdempotencyScope): Promise<T>;
  /**
   * Writes what `record` records, as one transaction that reads nothing. Such units of one org may be
   * written together by one statement (see PgInsertBatcher); resolves once committed. `result` is what
   * the operation answers with, for the request's Idempotency-Key (see db/idempotency.ts).
   */
  commit(record: (writes: Writes) => void, result?: unknown, idempotency?: IdempotencyScope): Promise<void>;
  /** Who is told, after each commit, of every org whose event stream advanced (the process's event bus). */
  onCommitted(listener: (event: CommittedEvent) => void): void;
  /**
   * Where failures the handle survives on its own are reported: the SQLite checkpoint thread failing
   * (SQLite's own checkpoints take over again), an idle PostgreSQL connection ending (the pool opens
   * another). Until one is set they are survived unreported.
   */
  reportFailures(report: FailureReport): void;
  /** For PostgreSQL: a fresh client config so LISTEN can hold its own connection. */
  pgConfig?: pg.ClientConfig;
  /** For PostgreSQL: the pool under `db`, for named (server-side prepared) statements outside transactions. */
  pgPool?: pg.Pool;
  /** For PostgreSQL: the schema named in the URL, if any. */
  pgSchema?: string;
  /**
   * For PostgreSQL: what wakes other instances after each commit (a NOTIFY sent once the write has
   * committed, see postgres/notifier.ts). Tests set `dropping` to lose every wake-up this handle sends.
   */
  pgNotifier?: { dropping: boolean; readonly senderId: string; readonly listenerApplicationName: string };
  /** For PostgreSQL: a handle of its own without statement timeouts, for migrations (closed by the caller). */
  unbounded?(): DbHandle;
  /** For SQLite files: the path of the database file. */
  sqlitePath?: string;
  /** For SQLite files: checkpoint the WAL from a background thread instead of inside commits. */
  offloadCheckpoints?(): void;
  /**
   * For SQLite: the connection's prepared statements, when a statement may run on it directly (see
   * `SqliteStatements`); null while a transaction is open on it.
   */
  sqliteDirect?(): SqliteStatements | null;
  close(): Promise<void>;
}
