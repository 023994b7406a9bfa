#!/usr/bin/env node
// Runs the compiled entry point (dist/, built by `npm run build`, which `npm ci` runs) when it is at
// least as new as every source file. Otherwise (a checkout edited since the last build) it runs the
// TypeScript sources through the tsx loader, which costs seconds of start-up and tens of MB of memory.
import { readdirSync, statSync } from 'node:fs';
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
  try {
    return statSync(join(root, 'dist', '.build-stamp')).mtimeMs >= newestSourceMtime(join(root, 'src'));
  } catch {
    return false; // never built, or no sources to compare with
  }
}

if (process.env.EMERGENCY_API_FROM_SOURCE !== 'true' && compiledIsFresh()) {
  await import('../dist/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/main.ts');
}
