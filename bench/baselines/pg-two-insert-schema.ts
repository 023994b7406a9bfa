// The two tables of the PostgreSQL baselines (as two-insert-db.ts's for SQLite), in a schema of their own so
// that a baseline never touches the service's tables; `drop` removes the schema at exit.
import pg from 'pg';

export async function createTwoInsertSchema(url: string, schema: string): Promise<{ drop(): Promise<void> }> {
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  try {
    await setup.query(`create schema ${schema}`);
    await setup.query(`create table ${schema}.a (id text primary key, org_id text, body text, created_at text)`);
    await setup.query(`create table ${schema}.b (id text primary key, a_id text, payload text, created_at text)`);
  } finally {
    await setup.end();
  }
  return {
    async drop() {
      const cleanup = new pg.Client({ connectionString: url });
      await cleanup.connect();
      await cleanup.query(`drop schema ${schema} cascade`);
      await cleanup.end();
    },
  };
}
