import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import * as files from './fixtures.js';
import { type MessagesFixture, messagesFixture } from './setup.js';

describe('messages: random bodies never cause a 5xx', () => {
  let fx: MessagesFixture;
  let path: string;
  before(async () => {
    fx = await messagesFixture();
    ({ path } = await fx.newEmergency());
  });
  after(() => fx.server.close());

  const realFile = fc.constantFrom(
    files.png(2, 2),
    files.jpeg(4, 4),
    files.gif(1, 1),
    files.webp(3, 3),
    files.mp4(16, 9),
    files.pdf(),
    files.mp3Frame(),
    files.wav(),
  );
  // Real files, cut or corrupted at random, and random bytes.
  const bytes = fc.oneof(
    realFile,
    fc.tuple(realFile, fc.nat()).map(([b, n]) => b.subarray(0, n % (b.length + 1))),
    fc.tuple(realFile, fc.nat(), fc.integer({ min: 0, max: 255 })).map(([b, i, v]) => {
      const copy = Buffer.from(b);
      if (copy.length) copy[i % copy.length] = v;
      return copy;
    }),
    fc.uint8Array({ maxLength: 256 }).map((u) => Buffer.from(u)),
  );
  const src = fc.oneof(
    bytes.map((b) => b.toString('base64')),
    fc.tuple(fc.constantFrom('image/png', 'x', '', 'a/b;c=d'), bytes).map(([t, b]) => `data:${t};base64,${b.toString('base64')}`),
    fc.webUrl({ withQueryParameters: true, withFragments: true }),
    fc.ipV4().map((ip) => `https://${ip}/a.png`),
    fc.ipV6().map((ip) => `https://[${ip}]/live.m3u8`),
    fc.tuple(fc.constantFrom('https://', 'http://', 'data:', 'ftp://', ''), fc.string()).map(([a, b]) => a + b),
    fc.string(),
  );
  const item = fc.oneof(
    src,
    fc.record(
      {
        src: fc.oneof(src, fc.jsonValue()),
        content: src,
        url: src,
        data: src,
        type: fc.oneof(fc.string({ maxLength: 300 }), fc.constantFrom('image', 'hls_video', 'file', 'video/mp4', null)),
        mimeType: fc.jsonValue(),
        kind: fc.string(),
        caption: fc.oneof(fc.string({ maxLength: 600 }), fc.jsonValue()),
        extra: fc.jsonValue(),
      },
      { requiredKeys: [] },
    ),
    fc.jsonValue(),
  );
  const body = fc.record(
    {
      content: fc.oneof(fc.string({ maxLength: 4100 }), fc.jsonValue()),
      author: fc.oneof(
        fc.record({ type: fc.oneof(fc.constantFrom('agent', 'system', 'user'), fc.jsonValue()), name: fc.jsonValue() }, { requiredKeys: [] }),
        fc.jsonValue(),
      ),
      attachments: fc.oneof(fc.array(item, { maxLength: 7 }), item),
      attachment: fc.oneof(fc.array(item, { maxLength: 3 }), item),
      unexpected: fc.jsonValue(),
    },
    { requiredKeys: [] },
  );

  it('structured random bodies', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await fx.api.post(path, b);
        assert.ok(res.status < 500, `${res.status} ${JSON.stringify(res.body)} for ${JSON.stringify(b).slice(0, 500)}`);
        assert.ok([201, 422].includes(res.status), `unexpected ${res.status}`);
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary JSON values and raw text as the body', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc.string(),
        ),
        async (text) => {
          const res = await fx.api.post(path, text, { 'content-type': 'application/json' });
          assert.ok(res.status < 500, `${res.status} for ${text.slice(0, 200)}`);
        },
      ),
      { numRuns: 200 },
    );
  });
});
