import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freshDatabaseUrl } from '../helpers/db.js';

/**
 * What a production install carries: `npm ci --omit=dev` installs the lock's packages not marked dev,
 * and the image's final stage copies the launcher, the build and those packages. Benchmark, test,
 * browser and build tooling must stay out of both, and everything the service imports must stay in.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));

/** Load generators, browsers, brokers, fakes, bundlers, compilers and linters: development only. */
const TOOLING =
  /^(autocannon|playwright|playwright-core|fast-check|mqtt|@nats-io\/.+|s3rver|vite|rolldown|esbuild|typescript|tsx|@redocly\/cli|madge|@biomejs\/.+|@scalar\/.+|vue|preact)$/;

/** The lock's entries `npm ci --omit=dev` installs, by path (`node_modules/a/node_modules/b`). */
const productionEntries = Object.entries<{ dev?: boolean; optional?: boolean }>(lock.packages).filter(([path, entry]) => path !== '' && !entry.dev);
const packageName = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);

describe('production install', () => {
  it('npm ci --omit=dev installs no benchmark, test, browser or build tooling', () => {
    assert.ok(productionEntries.length > 50, 'the lock lists the production dependencies');
    const tooling = productionEntries.map(([path]) => packageName(path)).filter((name) => TOOLING.test(name));
    assert.deepEqual([...new Set(tooling)], []);
  });

  it('every package the service imports is a production dependency', () => {
    const imported = new Set<string>();
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (path.endsWith('.ts')) {
          const code = readFileSync(path, 'utf8').replace(/^(import|export) type .*$/gm, '');
          // Static and dynamic imports, createRequire(...)('x') and .resolve('x'), and pino's transport targets
          // (`target:` names other things too: only names of installed packages count).
          for (const m of code.matchAll(/(?:from |import\(|\)\(|\.resolve\(|target: )'([^'./][^']*)'/g)) imported.add(m[1]!);
        }
      }
    };
    walk(join(ROOT, 'src'));
    const packages = [...imported]
      .filter((s) => !isBuiltin(s))
      .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2) : s.split('/').slice(0, 1)).join('/'))
      .filter((name) => existsSync(join(ROOT, 'node_modules', name, 'package.json')));
    assert.ok(packages.includes('fastify') && packages.includes('pino-pretty'), 'the scan finds static imports and transport targets');
    const missing = [...new Set(packages)].filter((name) => !(name in manifest.dependencies)).sort();
    assert.deepEqual(missing, [], 'imported by src/ but not in package.json dependencies');
  });

  it("the image's final stage copies the launcher, the build and the pruned dependencies, nothing else", () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const stages = dockerfile.split(/^FROM /m);
    const build = stages.at(-2)!;
    const final = stages.at(-1)!;
    assert.match(build, /npm prune --omit=dev/, 'the build stage prunes the development dependencies');
    const copies = [...final.matchAll(/^COPY (.*)$/gm)].map((m) => m[1]!);
    assert.deepEqual(copies, [
      '--from=build /app/package.json ./',
      '--from=build /app/node_modules ./node_modules',
      '--from=build /app/bin ./bin',
      '--from=build /app/dist ./dist',
    ]);
    assert.doesNotMatch(final, /\b(bench|test|scripts|src|console|clients)\//);
  });

  describe('started from a production layout', () => {
    const layout = mkdtempSync(join(tmpdir(), 'emergency-api-production-'));
    const database = freshDatabaseUrl();
    let child: ChildProcess | undefined;

    after(async () => {
      if (child && child.exitCode === null) {
        child.kill('SIGKILL');
        await new Promise((r) => child!.once('exit', r));
      }
      await database.drop();
      rmSync(layout, { recursive: true, force: true });
    });

    // npm test builds first; a checkout run file by file may have sources newer than the build.
    const stale = builtBefore(join(ROOT, 'dist', '.build-stamp'), join(ROOT, 'src'));
    const skip = stale && 'dist/ is older than src/: run npm run build';

    before(() => {
      if (stale) return;
      for (let dir = dirname(layout); dir !== dirname(dir); dir = dirname(dir)) {
        assert.ok(!existsSync(join(dir, 'node_modules')), `${dir} has no node_modules a module could resolve from`);
      }
      cpSync(join(ROOT, 'package.json'), join(layout, 'package.json'));
      cpSync(join(ROOT, 'bin'), join(layout, 'bin'), { recursive: true });
      cpSync(join(ROOT, 'dist'), join(layout, 'dist'), { recursive: true });
      for (const [path, entry] of productionEntries) {
        if (!existsSync(join(ROOT, path)) && entry.optional) continue; // another platform's binary
        linkPackage(join(ROOT, path), join(layout, path));
      }
    });

    it('holds every file the service reads beside its modules (new URL(..., import.meta.url) in src/)', { skip }, () => {
      const missing: string[] = [];
      const walk = (dir: string) => {
        for (const entry of readdirSync(join(ROOT, 'src', dir), { withFileTypes: true })) {
          const path = join(dir, entry.name);
          if (entry.isDirectory()) walk(path);
          else if (path.endsWith('.ts')) {
            for (const m of readFileSync(join(ROOT, 'src', path), 'utf8').matchAll(/new URL\('(\.[^']*)', import\.meta\.url\)/g)) {
              // The compiled module sits at the same place under dist/.
              const target = resolve(layout, 'dist', dirname(path), m[1]!);
              if (!/\.[jt]s$/.test(target) && !existsSync(target)) missing.push(`${m[1]} of src/${path}`);
            }
          }
        }
      };
      walk('');
      assert.deepEqual(missing, [], 'read at run time but absent from the production layout (copy them into dist/ in the build)');
    });

    it('serves the API, the console and /docs with package.json, bin/, dist/ and the production packages only', { skip }, async () => {
      const env: Record<string, string | undefined> = { ...process.env, NODE_OPTIONS: undefined, NODE_PATH: undefined };
      Object.assign(env, { NODE_ENV: 'production', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', DATABASE_URL: database.url });
      env.ATTACHMENT_STORE = `file:${join(layout, 'attachments')}`;
      child = spawn(process.execPath, ['bin/emergency-api.js', 'serve'], { cwd: layout, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
      const url = await new Promise<string>((resolveUrl, reject) => {
        child!.stdout!.on('data', () => {
          const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
          if (listening) resolveUrl(listening[1]!);
        });
        child!.once('exit', (code) => reject(new Error(`the service exited (${code}) before listening:\n${output}`)));
      });

      assert.equal((await fetch(`${url}/readyz`)).status, 200);
      assert.equal((await fetch(`${url}/api/public/v1/openapi.json`)).status, 200);
      const docs = await fetch(`${url}/docs/assets/standalone.js`);
      assert.equal(docs.status, 200, 'the reference bundle is in dist/');
      assert.ok((await docs.arrayBuffer()).byteLength > 0);
      const consolePage = await fetch(`${url}/console`);
      assert.equal(consolePage.status, 200, 'the console is built into dist/');
      assert.match(await consolePage.text(), /<script/);
    });
  });
});

/** True when the stamp is missing or older than the newest file under dir. */
function builtBefore(stamp: string, dir: string): boolean {
  if (!existsSync(stamp)) return true;
  const newest = (d: string): number =>
    Math.max(0, ...readdirSync(d, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(join(d, e.name)) : statSync(join(d, e.name)).mtimeMs)));
  return statSync(stamp).mtimeMs < newest(dir);
}

/** A package's files, hard-linked (copied across file systems), without its nested node_modules: those are entries of their own. */
function linkPackage(from: string, to: string, top = true): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (top && entry.name === 'node_modules') continue;
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) linkPackage(source, target, false);
    else if (lstatSync(source).isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else {
      try {
        linkSync(source, target);
      } catch {
        cpSync(source, target);
      }
    }
  }
}
