import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The service's source folder. */
export const SRC = join(import.meta.dirname, '..', '..', 'src');

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Every TypeScript file under src/: its absolute path, its path under src/ (e.g. `db/connect.ts`) and its text. */
export function sourceFiles(): { file: string; path: string; text: string }[] {
  return filesUnder(SRC).map((file) => ({ file, path: relative(SRC, file), text: readFileSync(file, 'utf8') }));
}
