#!/usr/bin/env node
// Runs the compiled service in dist/. An installed package (`npm install -g`) and a production layout ship dist/
// without src/, so there dist/ always runs: file times say nothing there, since npm writes every file of a
// tarball with one fixed time. In a checkout (src/ present), dist/ runs when the build's stamp is at least as new
// as every source file; a checkout edited since its last build runs the TypeScript sources through the tsx loader
// instead (a development dependency), which costs seconds of start-up and tens of MB of memory.
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

function runCompiled() {
  if (!existsSync(join(root, 'src'))) return true;
  if (process.env.EMERGENCY_API_FROM_SOURCE === 'true') return false;
  const stamp = join(root, 'dist', '.build-stamp');
  return existsSync(stamp) && statSync(stamp).mtimeMs >= newestSourceMtime(join(root, 'src'));
}

if (runCompiled()) {
  if (!existsSync(join(root, 'dist', 'main.js'))) {
    console.error(`${root} has neither src/ nor a built dist/: reinstall the package, or run \`npm run build\` where it was packed.`);
    process.exit(1);
  }
  await import('../dist/main.js');
} else {
  const { register } = await import('tsx/esm/api').catch(() => {
    console.error('dist/ is missing or older than src/, and tsx (a development dependency) is not installed: run `npm ci` and `npm run build`.');
    process.exit(1);
  });
  register();
  await import('../src/main.ts');
}
