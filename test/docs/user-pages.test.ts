import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = resolve(import.meta.dirname, '../..');

/** The pages users read: the README and docs/, except the measurements log and the design notes. */
const USER_PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md') && f !== 'benchmarks.md' && f !== 'architecture.md')
    .map((f) => `docs/${f}`),
];

/** A commit hash: 7 to 40 hex digits (letters and digits both) in backquotes, or after the word "commit". */
const COMMIT_HASH = /`(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}`|\bcommits?\s+`?(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b/gi;

describe('pages for users', () => {
  it('the README stays under 30 KB', () => {
    const size = statSync(join(ROOT, 'README.md')).size;
    assert.ok(size <= 30 * 1024, `README.md is ${size} bytes`);
  });

  it('name no commits: a user reads about the product, not its history', () => {
    assert.ok(USER_PAGES.length > 5 && USER_PAGES.includes('docs/operations.md'));
    const found = USER_PAGES.flatMap((page) => [...readFileSync(join(ROOT, page), 'utf8').matchAll(COMMIT_HASH)].map((m) => `${page}: ${m[0]}`));
    assert.deepEqual(found, []);
  });

  it('the pattern finds hashes as they are usually written', () => {
    const samples = ['built from `6b2054f`', 'since commit 8f1afc0 the', 'Commit `e808bddc0ffee1234`'];
    assert.deepEqual(
      samples.map((s) => (s.match(COMMIT_HASH) ?? []).length),
      [1, 1, 1],
    );
    assert.equal('`2147483647` and `#D32F2F` and `deadbeefcafe` (a word)'.match(COMMIT_HASH), null);
  });
});
