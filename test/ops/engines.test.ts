import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';

// semver is installed as fastify's own dependency; it has no type declarations here, so only the three
// functions the test calls are typed.
const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string } | null;
  validRange(range: string): string | null;
  satisfies(version: string, range: string): boolean;
};

const ROOT = resolve(import.meta.dirname, '../..');
const manifest = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(resolve(ROOT, 'package-lock.json'), 'utf8'));

/** A lock entry's Node range: `{ node: range }`, or the old array form `["node >= 6.0"]`. */
function nodeRange(engines: unknown): string | undefined {
  if (Array.isArray(engines)) return engines.find((e: string) => /^node\b/.test(e))?.replace(/^node\s*/, '');
  return (engines as { node?: string } | undefined)?.node;
}

describe('Node.js engines of the installed packages', () => {
  const stated: string = manifest.engines.node;
  const minimum = semver.minVersion(stated)?.version;

  it('the lock file records the Node.js range package.json states', () => {
    assert.ok(minimum, `package.json engines.node "${stated}" has a minimum version`);
    assert.equal(lock.packages[''].engines.node, stated);
  });

  it('every package in the lock runs on the oldest Node.js package.json allows (npm ci prints no EBADENGINE)', () => {
    const refusing: string[] = [];
    let checked = 0;
    for (const [path, entry] of Object.entries<{ version?: string; engines?: unknown }>(lock.packages)) {
      const range = path === '' ? undefined : nodeRange(entry.engines);
      if (range === undefined) continue;
      checked++;
      if (semver.validRange(range) === null || !semver.satisfies(minimum!, range)) refusing.push(`${path}@${entry.version} wants node ${range}`);
    }
    assert.ok(checked > 100, 'the lock file lists engines for many packages');
    assert.deepEqual(refusing, [], `packages that refuse Node.js ${minimum}`);
  });
});
