#!/usr/bin/env node
// Runs the compiled entry point (dist/, built by `npm run build`, which `npm ci` runs) when it is at
// least as new as every source file, or when there are no sources (a production layout ships dist/
// alone). Otherwise (a checkout edited since the last build) it runs the TypeScript sources through
// the tsx loader, a development dependency, which costs seconds of start-up and tens of MB of memory.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function newestSourceMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestSourceMtime(path) : statSync(path).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

function compiledIsFresh() {
  const stamp = join(root, 'dist', '.build-stamp');
  if (!existsSync(stamp)) return false;
  if (!existsSync(join(root, 'src'))) return true;
  return statSync(stamp).mtimeMs >= newestSourceMtime(join(root, 'src'));
}

if (process.env.EMERGENCY_API_FROM_SOURCE !== 'true' && compiledIsFresh()) {
  await import('../dist/main.js');
} else {
  const { register } = await import('tsx/esm/api').catch(() => {
    console.error('dist/ is missing or older than src/, and tsx (a development dependency) is not installed: run `npm ci` and `npm run build`.');
    process.exit(1);
  });
  register();
  await import('../src/main.ts');
}
