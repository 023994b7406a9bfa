import { Migrator, type MigrationProvider, sql } from 'kysely';
import type { DbHandle } from './connect.js';
import { migrations } from './migrations/index.js';

const provider: MigrationProvider = { getMigrations: async () => migrations };

/**
 * Kysely looks for its bookkeeping tables in every schema unless told which one to use: with a
 * schema in the URL, another schema's kysely_migration_lock would be taken for this one's.
 */
const migratorFor = (handle: DbHandle) =>
  new Migrator({ db: handle.db, provider, ...(handle.pgSchema ? { migrationTableSchema: handle.pgSchema } : {}) });

/** Applies pending migrations. Kysely takes a lock, so instances starting together apply them once. */
export async function migrateToLatest(handle: DbHandle): Promise<string[]> {
  if (handle.pgSchema) {
    // The schema may be new: it must exist before the migrator creates its tables in it.
    await sql.raw(`create schema if not exists ${handle.pgSchema}`).execute(handle.db);
  }
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migratorFor(handle).migrateToLatest();
    if (!error) return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    // Kysely's table lookup reads the catalog of every schema; a schema dropped by someone else at
    // that moment fails it with "schema/relation does not exist". Nothing of ours changed: retry.
    const code = (error as { code?: string }).code;
    if (attempt < 3 && (code === '3F000' || code === '42P01')) continue;
    throw error instanceof Error ? error : new Error(String(error));
  }
}

/** True when every known migration has been applied: what /readyz reports. */
export async function migrationsApplied(handle: DbHandle): Promise<boolean> {
  const migrator = migratorFor(handle);
  const all = await migrator.getMigrations();
  return all.every((m) => m.executedAt !== undefined);
}
