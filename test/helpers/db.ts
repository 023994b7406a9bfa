import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * A fresh, isolated database for one test suite on the dialect CI selects with DATABASE_URL:
 * a new SQLite file, or a new schema in the PostgreSQL database (dropped by `drop`).
 */
/** CI runs every suite on PostgreSQL too: DATABASE_URL then names the database. */
export const onPostgres = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '');

export function freshDatabaseUrl(): { url: string; dialect: 'sqlite' | 'postgres'; drop(): Promise<void> } {
  const base = process.env.DATABASE_URL;
  if (base && onPostgres) {
    const schema = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
    const url = new URL(base);
    url.searchParams.set('schema', schema);
    return {
      url: url.toString(),
      dialect: 'postgres',
      drop: () => onDatabase(`drop schema if exists ${schema} cascade`),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'emergency-api-test-'));
  return {
    url: `sqlite:${join(dir, 'test.db')}`,
    dialect: 'sqlite',
    async drop() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs SQL on a connection of its own to the PostgreSQL database of DATABASE_URL itself (no schema). */
export async function onDatabase(statement: string, values: unknown[] = []): Promise<void> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    // Values need the extended protocol, which runs one statement only; without them, several may run.
    await (values.length > 0 ? client.query(statement, values) : client.query(statement));
  } finally {
    await client.end();
  }
}
