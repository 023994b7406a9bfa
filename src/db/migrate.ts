import { Migrator, type MigrationProvider } from 'kysely';
import type { DbHandle } from './handle.js';
import { migrations } from './migrations/index.js';

const provider: MigrationProvider = { getMigrations: async () => migrations };

// Kysely keeps its bookkeeping tables in the URL's schema, if any.
const migratorFor = (handle: DbHandle) => new Migrator({ db: handle.db, provider, ...(handle.pgSchema ? { migrationTableSchema: handle.pgSchema } : {}) });

/** Applies pending migrations; Kysely's lock makes instances starting together apply them once. */
export async function migrateToLatest(handle: DbHandle): Promise<string[]> {
  // Without the statement timeout: an index built on a large table may rightly take minutes.
  const maintenance = handle.unbounded?.() ?? handle;
  try {
    const { error, results } = await migratorFor(maintenance).migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(String(error));
    return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  } finally {
    if (maintenance !== handle) await maintenance.close();
  }
}

/** True when every known migration has been applied: what /readyz reports. */
export async function migrationsApplied(handle: DbHandle): Promise<boolean> {
  const migrator = migratorFor(handle);
  const all = await migrator.getMigrations();
  return all.every((m) => m.executedAt !== undefined);
}

/** The migrations a start applied, in one line: a first start applies them all, and what is printed next stays in view. */
export function migrationsSummary(applied: string[]): string {
  return applied.length === 1 ? `migration ${applied[0]} applied` : `${applied.length} migrations applied (${applied[0]} … ${applied.at(-1)})`;
}
