import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { decodeBase64Strict } from '../../src/domain/attachments/inline-decode.js';

/**
 * The strict decoder as it was written first: decode, re-encode and compare. The service's decoder checks
 * the text by scanning instead (no copy of megabytes of base64); it must accept exactly what this accepts,
 * and decode it to the same bytes.
 */
function reference(raw: string): Buffer | null {
  const text = raw.replace(/[\t\n\r ]/g, '');
  const urlSafe = /[-_]/.test(text);
  if (!(urlSafe ? /^[A-Za-z0-9_-]*={0,2}$/ : /^[A-Za-z0-9+/]*={0,2}$/).test(text)) return null;
  const unpadded = text.replace(/=+$/, '');
  if (unpadded.length % 4 === 1) return null;
  if (text.length !== unpadded.length && text.length % 4 !== 0) return null;
  const bytes = Buffer.from(unpadded, urlSafe ? 'base64url' : 'base64');
  const again = bytes.toString(urlSafe ? 'base64url' : 'base64').replace(/=+$/, '');
  return again === unpadded ? bytes : null;
}

const alphabet = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=\n \t*'];

describe('strict base64', () => {
  it('accepts and decodes exactly what the re-encoding check does', () => {
    const text = fc.oneof(
      fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64')),
      fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64url')),
      fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64').replace(/=+$/, '')),
      fc.array(fc.constantFrom(...alphabet), { maxLength: 40 }).map((chars) => chars.join('')),
    );
    fc.assert(
      fc.property(text, (t) => {
        assert.deepEqual(decodeBase64Strict(t), reference(t), JSON.stringify(t));
      }),
      { numRuns: 20_000 },
    );
  });

  it('refuses stray bits, bad padding and mixed alphabets', () => {
    for (const bad of ['QR==', 'QUJ=', 'QUJ', 'QQ=', 'Q===', 'a+b_', 'QUJD\u0000']) {
      assert.equal(decodeBase64Strict(bad), null, bad);
    }
    assert.deepEqual(decodeBase64Strict('QUI='), Buffer.from('AB'));
    assert.deepEqual(decodeBase64Strict('QUI'), Buffer.from('AB'));
    assert.deepEqual(decodeBase64Strict('QU\nI='), Buffer.from('AB'));
  });
});
