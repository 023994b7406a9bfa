import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * A fresh, isolated database for one test suite on the dialect CI selects with DATABASE_URL:
 * a new SQLite file, or a new schema in the PostgreSQL database (dropped by `drop`).
 */
export function freshDatabaseUrl(): { url: string; dialect: 'sqlite' | 'postgres'; drop(): Promise<void> } {
  const base = process.env.DATABASE_URL;
  if (base && /^postgres(ql)?:\/\//.test(base)) {
    const schema = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
    const url = new URL(base);
    url.searchParams.set('schema', schema);
    return {
      url: url.toString(),
      dialect: 'postgres',
      async drop() {
        const client = new pg.Client({ connectionString: base });
        await client.connect();
        try {
          await client.query(`drop schema if exists ${schema} cascade`);
        } finally {
          await client.end();
        }
      },
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
