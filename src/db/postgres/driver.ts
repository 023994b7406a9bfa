import { createRequire } from 'node:module';
import type pg from 'pg';

let loaded: typeof pg | null = null;

/** The `pg` driver, loaded on first use so that processes on the SQLite default never pay its memory. */
export function pgDriver(): typeof pg {
  if (!loaded) {
    loaded = createRequire(import.meta.url)('pg') as typeof pg;
    // Counts and sums come back from pg as strings (int8); they are small here, so parse them as numbers.
    loaded.types.setTypeParser(20, (v) => Number(v));
  }
  return loaded;
}
