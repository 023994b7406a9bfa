import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { z } from 'zod';
import { emergencyPath, orgPath } from '../../src/http/routes/params.js';
import { fastAcceptOf } from '../../src/http/validation.js';

// Path parameters skip zod when a direct check of the same rules accepts them. That check may only
// ever accept what zod accepts: anything else must reach zod, which writes the 422.
const uuidLike = fc.oneof(
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.uuid().map((u) => u.slice(0, 35)),
  fc.uuid().map((u) => `${u} `),
  fc.uuid().map((u) => u.replace(/-/g, '')),
  fc.constantFrom('00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '01a2007d-c2d0-9000-a026-8bb6adccc472'),
  fc.string({ maxLength: 40 }),
);
const idLike = fc.oneof(uuidLike, fc.string({ minLength: 0, maxLength: 140 }), fc.constant(''));
const anyValue = fc.oneof(idLike, fc.integer(), fc.constant(null), fc.constant(undefined), fc.array(fc.string(), { maxLength: 2 }));

describe('path parameter fast path', () => {
  for (const [name, schema, keys] of [
    ['emergency path', emergencyPath, ['org_id', 'emergency_id']],
    ['org path', orgPath, ['org_id']],
  ] as const) {
    it(`${name}: accepts only what zod accepts, and accepts well-formed parameters`, () => {
      const fastAccept = fastAcceptOf(schema);
      assert.ok(fastAccept, 'a fast check is derived for this schema');
      const params = fc.oneof(
        fc.record(Object.fromEntries(keys.map((k) => [k, anyValue]))),
        fc.record(Object.fromEntries(keys.map((k) => [k, idLike]))),
        fc.record({ ...Object.fromEntries(keys.map((k) => [k, idLike])), extra: fc.string() }),
        fc.dictionary(fc.string({ maxLength: 12 }), anyValue, { maxKeys: 3 }),
      );
      fc.assert(
        fc.property(params, (data) => {
          if (fastAccept(data)) assert.equal(schema.safeParse(data).success, true, JSON.stringify(data));
        }),
        { numRuns: 5_000 },
      );
      const valid = Object.fromEntries(keys.map((k) => [k, '01a2007d-c2d0-7000-a026-8bb6adccc472']));
      assert.equal(fastAccept(valid), true);
    });
  }

  it('has no direct check for a schema that registered none', () => {
    assert.equal(fastAcceptOf(z.object({ id: z.email() })), null);
    assert.equal(fastAcceptOf(z.object({ org_id: z.uuid() })), null);
  });
});
