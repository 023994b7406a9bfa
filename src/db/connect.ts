import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  Kysely,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import type pg from 'pg';
import { pgDriver } from './pg-module.js';
import { OwnSchemaPostgresDialect } from './pg-schema-introspector.js';
import { startSqliteCheckpointer } from './sqlite-checkpointer.js';
import { SqliteGroupCommitter } from './sqlite-group-commit.js';
import type { Database } from './types.js';

export type Dialect = 'sqlite' | 'postgres';

/** A failure the database handle survived, with what it did about it. */
export type FailureReport = (err: Error, consequence: string) => void;

export interface DbHandle {
  db: Kysely<Database>;
  dialect: Dialect;
  /** The connection string without any embedded secret, safe for logs. */
  describe: string;
  /** For PostgreSQL: a fresh client config so LISTEN can hold its own connection. */
  pgConfig?: pg.ClientConfig;
  /** For SQLite files: the path of the database file. */
  sqlitePath?: string;
  /** For SQLite files: checkpoint the WAL from a background thread instead of inside commits. */
  offloadCheckpoints?(): void;
  /**
   * Where failures the handle survives on its own are reported: the SQLite checkpoint thread failing
   * (SQLite's own checkpoints take over again), an idle PostgreSQL connection ending (the pool opens
   * another). Until one is set they are survived unreported.
   */
  reportFailures(report: FailureReport): void;
  /** For PostgreSQL: the pool under `db`, for named (server-side prepared) statements outside transactions. */
  pgPool?: pg.Pool;
  /** For PostgreSQL: the schema named in the URL, if any. */
  pgSchema?: string;
  /** For SQLite: runs transactions through group commit (see SqliteGroupCommitter). */
  groupCommit?: SqliteGroupCommitter;
  /**
   * For SQLite: the connection's prepared statements, when a statement may run on it directly (see
   * `SqliteStatements`); null while a transaction is open on it.
   */
  sqliteDirect?(): SqliteStatements | null;
  close(): Promise<void>;
}

/**
 * SQLite's default deferred BEGIN takes the write lock only at the first write; if another process
 * wrote in between, the upgrade fails at once with SQLITE_BUSY. BEGIN IMMEDIATE takes the lock up front,
 * so concurrent writers (the server and the admin CLI) simply wait on busy_timeout.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

type SqliteDatabaseLike = Pick<BetterSqlite3.Database, 'prepare' | 'close'>;

/**
 * The statement cache of the one SQLite connection, to run a prepared query on it directly rather
 * than through Kysely's driver, whose promise hops cost more than the short statements themselves.
 * Only where no other transaction can be open on the connection: inside a group-commit job (which
 * holds the batch's transaction), or outside one while group commit is idle.
 */
export type SqliteStatements = Pick<BetterSqlite3.Database, 'prepare'>;

/**
 * Kysely prepares every statement anew; preparing is a large share of a short query's cost. The
 * service issues a small fixed set of SQL texts, so prepared statements are kept by text (bounded).
 * Safe because Kysely runs each statement to completion (all/run) before the next one starts.
 */
function withStatementCache(sqlite: BetterSqlite3.Database, max = 500): SqliteDatabaseLike {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    prepare(source: string) {
      let stmt = cache.get(source);
      if (!stmt) {
        stmt = sqlite.prepare(source);
        if (cache.size >= max) cache.delete(cache.keys().next().value!);
        cache.set(source, stmt);
      }
      return stmt;
    },
    close: () => sqlite.close(),
  } as SqliteDatabaseLike;
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly database: SqliteDatabaseLike) {
    super({ database: database as never });
  }
  override createDriver() {
    return new ImmediateSqliteDriver({ database: this.database as never });
  }
  override createAdapter() {
    return new SqliteAdapter();
  }
  override createQueryCompiler() {
    return new SqliteQueryCompiler();
  }
  override createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db);
  }
}

export function openDatabase(url: string): DbHandle {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const sqlite = new BetterSqlite3(path);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('busy_timeout = 10000');
    sqlite.pragma('foreign_keys = ON');
    // Group commit runs every transaction of a batch under a savepoint, whose undo journal SQLite
    // otherwise keeps in a temporary file: in memory, a declare's savepoint costs half as much.
    sqlite.pragma('temp_store = MEMORY');
    const statements = withStatementCache(sqlite);
    const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect(statements) });
    const groupCommit = new SqliteGroupCommitter(db, sqlite, statements);
    let stopCheckpointer: (() => Promise<void>) | null = null;
    let report: FailureReport = () => undefined;
    return {
      db,
      dialect: 'sqlite',
      describe: `sqlite:${path}`,
      sqlitePath: path === ':memory:' ? undefined : path,
      groupCommit,
      // Direct statements must not land inside an open transaction (they would read its uncommitted
      // rows); SQLite's own flag says exactly when one is open, including between group-commit batches
      // (where the commit's wake-ups read the rows just committed).
      sqliteDirect: () => (sqlite.inTransaction ? null : statements),
      /** Moves WAL checkpoints off the request thread (long-running processes only). */
      offloadCheckpoints() {
        if (path === ':memory:' || stopCheckpointer) return;
        sqlite.pragma('wal_autocheckpoint = 0');
        stopCheckpointer = startSqliteCheckpointer(path, (err) => {
          // Without the thread the WAL would grow without bound: SQLite's default threshold again.
          if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
          report(err, 'the SQLite checkpoint thread failed; SQLite checkpoints inside commits again');
        });
      },
      reportFailures(to) {
        report = to;
      },
      async close() {
        await stopCheckpointer?.();
        await db.destroy();
      },
    };
  }
  const parsed = new URL(url);
  // `?schema=NAME` selects a PostgreSQL schema (created on first use); tests use it to isolate runs.
  const schema = parsed.searchParams.get('schema');
  parsed.searchParams.delete('schema');
  const clientConfig: pg.ClientConfig = { connectionString: parsed.toString() };
  if (schema) {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error('DATABASE_URL schema must be a lowercase identifier');
    clientConfig.options = `-c search_path=${schema}`;
  }
  const pool = new (pgDriver().Pool)({ ...clientConfig, max: 10 });
  // An idle connection of the pool can end under it (PostgreSQL restarts, an administrator or an idle
  // timeout on the way ends it): the pool drops it and emits 'error'. Unheard, that event would end
  // the process, while the next query simply opens a new connection.
  let report: FailureReport = () => undefined;
  pool.on('error', (err) => report(err, 'an idle PostgreSQL connection ended; the pool opens a new one'));
  const db = new Kysely<Database>({ dialect: new OwnSchemaPostgresDialect({ pool }) });
  const describe = `postgres://${parsed.host}${parsed.pathname}${schema ? `?schema=${schema}` : ''}`;
  return {
    db,
    dialect: 'postgres',
    describe,
    pgConfig: clientConfig,
    pgPool: pool,
    pgSchema: schema ?? undefined,
    reportFailures(to) {
      report = to;
    },
    close: () => db.destroy(),
  };
}

/** A transaction plus work to run once it has committed (wake-ups of readers, never state changes). */
export interface Tx {
  db: Kysely<Database>;
  dialect: Dialect;
  afterCommit(fn: () => void): void;
  /** SQLite group commit: stream offsets counted for the whole batch (see BatchEventOffsets). */
  eventOffsets?: { next(orgId: string): number | null };
  /** SQLite group commit: the batch's connection, for statements run on it directly. */
  sqliteDirect?(): SqliteStatements | null;
}

export async function inTransaction<T>(handle: DbHandle, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if (handle.groupCommit) return handle.groupCommit.run(fn);
  const callbacks: (() => void)[] = [];
  const result = await handle.db.transaction().execute((trx) =>
    fn({ db: trx, dialect: handle.dialect, afterCommit: (cb) => callbacks.push(cb) }),
  );
  for (const cb of callbacks) cb();
  return result;
}

export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
