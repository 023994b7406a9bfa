import type { Compilable, CompiledQuery, Kysely } from 'kysely';
import type pg from 'pg';
import type { Dialect, SqliteStatements } from './handle.js';
import type { Database } from './types.js';

/** Where a prepared query runs: a database handle or a transaction. */
interface Target {
  db: Kysely<Database>;
  dialect: Dialect;
  /** Present on a PostgreSQL handle (never on a transaction): see `execute`. */
  pgPool?: pg.Pool;
  /** SQLite: the connection, when a statement may run on it directly (see SqliteStatements). */
  sqliteDirect?(): SqliteStatements | null;
}

let statementCount = 0;

/** What Kysely's SQLite driver does, without its connection lock and promise hops. */
function runOn<R>(direct: SqliteStatements, query: CompiledQuery<R>): R[] {
  const statement = direct.prepare(query.sql);
  if (statement.reader) return statement.all(query.parameters) as R[];
  statement.run(query.parameters);
  return [];
}

const SENTINEL_PREFIX = '\u0000prepared-param:';

/** A value placeholder of a prepared query; typed `any` so it fits any column of the builder. */
type Param<N extends string> = (name: N) => any;

/**
 * A query built by Kysely once per dialect, then only re-bound: building costs more than SQLite takes to run a
 * short statement. Name varying values `p('name')`; pass null, never undefined, so the shape never changes.
 */
export function preparedQuery<N extends string, R>(build: (db: Kysely<Database>, p: Param<N>) => Compilable<R> | CompiledQuery<R>) {
  const compiled = new Map<Dialect, { query: CompiledQuery<R>; slots: (N | { constant: unknown })[] }>();
  // Unique in the process: pg prepares a statement name once per connection.
  const name = `emergency_api_q${++statementCount}`;

  function compile(target: Target) {
    let entry = compiled.get(target.dialect);
    if (!entry) {
      const built = build(target.db, (name) => `${SENTINEL_PREFIX}${name}`);
      const query = 'compile' in built ? built.compile() : built;
      const slots = query.parameters.map((value) =>
        typeof value === 'string' && value.startsWith(SENTINEL_PREFIX) ? (value.slice(SENTINEL_PREFIX.length) as N) : { constant: value },
      );
      entry = { query, slots };
      compiled.set(target.dialect, entry);
    }
    return entry;
  }

  return {
    /** The compiled query bound to `values`, to run with `target.db.executeQuery`. */
    bind(target: Target, values: Record<N, unknown>): CompiledQuery<R> {
      const { query, slots } = compile(target);
      const parameters = slots.map((slot) => {
        if (typeof slot !== 'string') return slot.constant;
        const value = values[slot];
        if (value === undefined) throw new Error(`prepared query: no value for ${slot}`);
        return value;
      });
      return { ...query, parameters };
    },
    /** Runs the query; outside a transaction on PostgreSQL as a named statement, so each connection plans it only once. */
    async execute(target: Target, values: Record<N, unknown>): Promise<R[]> {
      const query = this.bind(target, values);
      if (target.pgPool) {
        const result = await target.pgPool.query({ name, text: query.sql, values: query.parameters as unknown[] });
        return result.rows as R[];
      }
      const direct = target.sqliteDirect?.();
      if (direct) return runOn(direct, query);
      const result = await target.db.executeQuery(query);
      return result.rows;
    },
    /** Runs the query at once on a connection taking statements directly (a group-commit job's writes): no promise per statement. */
    runNow(target: Omit<Target, 'sqliteDirect'> & { sqliteDirect(): SqliteStatements }, values: Record<N, unknown>): R[] {
      return runOn(target.sqliteDirect(), this.bind(target, values));
    },
  };
}
