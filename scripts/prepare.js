// `npm ci` and `npm pack` run this (the prepare script). A full install builds dist/; a production install
// (`npm ci --omit=dev`) has no compiler, so it keeps the dist/ already built instead of deleting it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

function installed(name) {
  try {
    require.resolve(`${name}/package.json`);
    return true;
  } catch {
    return false;
  }
}

if (['typescript', 'vite'].every(installed)) {
  process.exitCode = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' }).status ?? 1;
} else if (existsSync(new URL('../dist/.build-stamp', import.meta.url))) {
  console.log('The build tools are not installed (a production install, or a pack of a built tree): dist/ stays as built.');
} else {
  console.error('dist/ is not built, and a production install (--omit=dev) cannot build it: run `npm ci` and `npm run build` first.');
  process.exit(1);
}
