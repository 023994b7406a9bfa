import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, type DatabaseConnection, Kysely, SqliteAdapter, SqliteDialect, SqliteDriver, SqliteIntrospector, SqliteQueryCompiler } from 'kysely';
import { DatabaseDirectoryMissingError, type DatabaseTimeouts, type DbHandle, DatabaseMissingError, type FailureReport } from '../handle.js';
import { DEFAULT_SQLITE_PATH } from '../../config.js';
import type { Database } from '../types.js';
import type { CommittedEvent } from '../unit-of-work.js';
import { startSqliteCheckpointer } from './checkpointer.js';
import { SqliteGroupCommitter } from './group-commit.js';

/**
 * BEGIN IMMEDIATE takes the write lock up front, so concurrent writers (server, admin CLI) wait on busy_timeout;
 * a deferred BEGIN's later lock upgrade would fail at once with SQLITE_BUSY.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

type SqliteDatabaseLike = Pick<BetterSqlite3.Database, 'prepare' | 'close'>;

/**
 * Keeps prepared statements by SQL text, since Kysely prepares every statement anew and the service issues few
 * texts. Safe because Kysely runs each statement to completion before the next one starts.
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

/** The embedded database: one connection, WAL, every transaction through group commit. Without `create`, the file must exist. */
export function openSqlite(path: string, timeouts: DatabaseTimeouts, create = true): DbHandle {
  const file = path !== ':memory:';
  if (file && !create && !existsSync(path)) throw new DatabaseMissingError(`sqlite:${path}`);
  if (file && create) {
    if (!existsSync(dirname(path)) && path !== DEFAULT_SQLITE_PATH) throw new DatabaseDirectoryMissingError(`sqlite:${path}`, dirname(path));
    // Creates the default path's directory; on a path whose "directory" is a file, fails with what start-up explains.
    mkdirSync(dirname(path), { recursive: true });
  }
  // fileMustExist also covers a file removed between the check above and the open.
  const sqlite = new BetterSqlite3(path, { fileMustExist: file && !create });
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  // How long a write waits for another process's write lock before SQLITE_BUSY, answered with 503.
  sqlite.pragma(`busy_timeout = ${Math.round(timeouts.statementTimeoutMs)}`);
  sqlite.pragma('foreign_keys = ON');
  // Keeps the journals of group commit's per-job savepoints in memory rather than in a temporary file.
  sqlite.pragma('temp_store = MEMORY');
  const statements = withStatementCache(sqlite);
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect(statements) });
  let committedListener: (event: CommittedEvent) => void = () => undefined;
  const groupCommit = new SqliteGroupCommitter(db, sqlite, statements, (event) => committedListener(event));
  let stopCheckpointer: (() => Promise<void>) | null = null;
  let report: FailureReport = () => undefined;
  return {
    db,
    dialect: 'sqlite',
    describe: `sqlite:${path}`,
    sqlitePath: path === ':memory:' ? undefined : path,
    unitOfWork: (fn, idempotency) => groupCommit.run(fn, idempotency),
    async commit(record, result, idempotency) {
      await groupCommit.record(record, result, idempotency);
    },
    onCommitted(listener) {
      committedListener = listener;
    },
    // Never inside an open transaction, whose uncommitted rows a direct statement would read.
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
