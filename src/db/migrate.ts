import { Migrator, type MigrationProvider, sql } from 'kysely';
import type { DbHandle } from './connect.js';
import { migrations } from './migrations/index.js';

const provider: MigrationProvider = { getMigrations: async () => migrations };

/**
 * With a `?schema=` URL the migration tables are named with that schema: otherwise Kysely's check
 * for their existence matches the same tables in any other schema of the database and skips creating them.
 */
const migratorFor = (handle: DbHandle) =>
  new Migrator({ db: handle.db, provider, ...(handle.pgSchema ? { migrationTableSchema: handle.pgSchema } : {}) });

/** Applies pending migrations. Kysely takes a lock, so instances starting together apply them once. */
export async function migrateToLatest(handle: DbHandle): Promise<string[]> {
  if (handle.pgSchema) {
    // The schema may be new: it must exist before the migrator creates its tables in it.
    await sql.raw(`create schema if not exists ${handle.pgSchema}`).execute(handle.db);
  }
  const migrator = migratorFor(handle);
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** True when every known migration has been applied: what /readyz reports. */
export async function migrationsApplied(handle: DbHandle): Promise<boolean> {
  const migrator = migratorFor(handle);
  const all = await migrator.getMigrations();
  return all.every((m) => m.executedAt !== undefined);
}
