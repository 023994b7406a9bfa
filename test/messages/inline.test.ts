import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as files from './fixtures.js';
import { type MessagesFixture, messagesFixture } from './setup.js';

describe('messages: inline attachments', () => {
  let fx: MessagesFixture;
  let storeDir: string;
  let path: string;
  before(async () => {
    storeDir = mkdtempSync(join(tmpdir(), 'attachments-'));
    fx = await messagesFixture({ ATTACHMENT_STORE: `file:${storeDir}`, ATTACHMENT_PUBLIC_BASE_URL: 'https://cdn.example.com/media' });
    ({ path } = await fx.newEmergency());
  });
  after(async () => {
    await fx.server.close();
    rmSync(storeDir, { recursive: true, force: true });
  });

  const cases: { name: string; bytes: () => Buffer; kind: string; mimeType: string; ext: string; width: number | null; height: number | null }[] = [
    { name: 'PNG', bytes: () => files.png(3, 2), kind: 'image', mimeType: 'image/png', ext: 'png', width: 3, height: 2 },
    { name: 'JPEG', bytes: () => files.jpeg(640, 480), kind: 'image', mimeType: 'image/jpeg', ext: 'jpg', width: 640, height: 480 },
    { name: 'GIF', bytes: () => files.gif(5, 7), kind: 'image', mimeType: 'image/gif', ext: 'gif', width: 5, height: 7 },
    { name: 'WebP', bytes: () => files.webp(300, 200), kind: 'image', mimeType: 'image/webp', ext: 'webp', width: 300, height: 200 },
    { name: 'MP4 (tkhd v0)', bytes: () => files.mp4(1280, 720), kind: 'video', mimeType: 'video/mp4', ext: 'mp4', width: 1280, height: 720 },
    {
      name: 'QuickTime (tkhd v1)',
      bytes: () => files.mp4(1920, 1080, { brand: 'qt  ', tkhdVersion: 1 }),
      kind: 'video',
      mimeType: 'video/quicktime',
      ext: 'mov',
      width: 1920,
      height: 1080,
    },
    { name: 'PDF', bytes: () => files.pdf(), kind: 'file', mimeType: 'application/pdf', ext: 'pdf', width: null, height: null },
    { name: 'MP3 frame', bytes: () => files.mp3Frame(), kind: 'audio', mimeType: 'audio/mpeg', ext: 'mp3', width: null, height: null },
    { name: 'MP3 with ID3', bytes: () => files.mp3WithId3(), kind: 'audio', mimeType: 'audio/mpeg', ext: 'mp3', width: null, height: null },
    { name: 'WAV', bytes: () => files.wav(), kind: 'audio', mimeType: 'audio/wav', ext: 'wav', width: null, height: null },
  ];

  for (const c of cases) {
    it(`stores a ${c.name} and reports what its bytes are`, async () => {
      const bytes = c.bytes();
      // The declared type is deliberately wrong: the bytes decide.
      const res = await fx.api.post(path, { content: c.name, attachments: [{ src: files.dataUri('text/plain', bytes), type: 'audio/ogg', caption: 'cap' }] });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const [a] = res.body.attachments;
      const sha = createHash('sha256').update(bytes).digest('hex');
      assert.deepEqual(
        { kind: a.kind, mimeType: a.mimeType, source: a.source, sizeBytes: a.sizeBytes, width: a.width, height: a.height, caption: a.caption },
        { kind: c.kind, mimeType: c.mimeType, source: 'data_uri', sizeBytes: bytes.length, width: c.width, height: c.height, caption: 'cap' },
      );
      assert.equal(a.url, `https://cdn.example.com/media/${sha.slice(0, 2)}/${sha}.${c.ext}`);
      // Content-addressed on disk under the store root, byte for byte.
      assert.deepEqual(readFileSync(join(storeDir, sha.slice(0, 2), `${sha}.${c.ext}`)), bytes);
    });
  }

  it('accepts bare base64 (standard and URL-safe, with line breaks) as source base64', async () => {
    const bytes = files.png(10, 10);
    const wrapped = bytes.toString('base64').replace(/(.{20})/g, '$1\n');
    const res = await fx.api.post(path, { attachments: [wrapped, bytes.toString('base64url')] });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(
      res.body.attachments.map((a: any) => [a.source, a.mimeType, a.width]),
      [
        ['base64', 'image/png', 10],
        ['base64', 'image/png', 10],
      ],
    );
  });

  it('accepts a truncated PNG as a PNG whose size is unknown', async () => {
    const truncated = files.png(64, 64).subarray(0, 20);
    const res = await fx.api.post(path, { attachments: [files.dataUri('image/png', truncated)] });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.attachments[0].mimeType, 'image/png');
    assert.equal(res.body.attachments[0].width, null);
    assert.equal(res.body.attachments[0].height, null);
  });

  it('keeps the order of several attachments and stores one copy of identical bytes', async () => {
    const a = files.gif(1, 1);
    const res = await fx.api.post(path, {
      content: 'order',
      attachments: [files.dataUri('image/gif', a), files.pdf().toString('base64'), a.toString('base64')],
    });
    assert.equal(res.status, 201);
    assert.deepEqual(
      res.body.attachments.map((x: any) => x.mimeType),
      ['image/gif', 'application/pdf', 'image/gif'],
    );
    assert.equal(res.body.attachments[0].url, res.body.attachments[2].url);
  });

  const rejects: { name: string; src: () => string; code: string }[] = [
    { name: 'random bytes', src: () => files.noise(512).toString('base64'), code: 'unsupported_media_type' },
    { name: 'plain text', src: () => Buffer.from('hello, this is text').toString('base64'), code: 'unsupported_media_type' },
    { name: 'a percent-encoded text data URI', src: () => 'data:text/plain,hello%20world', code: 'unsupported_media_type' },
    {
      name: 'a half PNG signature declared as image/png',
      src: () => files.dataUri('image/png', Buffer.from('\x89PNG but not really', 'latin1')),
      code: 'unsupported_media_type',
    },
    { name: 'invalid base64 characters', src: () => 'iVBORw0KGgo*AAAA', code: 'invalid_base64' },
    { name: 'base64 with a bad length', src: () => 'iVBORw0KG', code: 'invalid_base64' },
    { name: 'base64 with stray trailing bits', src: () => 'iVBORw0KGgp=', code: 'invalid_base64' },
    { name: 'base64 with misplaced padding', src: () => 'iV=BORw0', code: 'invalid_base64' },
    { name: 'a data URI with bad base64', src: () => 'data:image/png;base64,%%%%', code: 'invalid_base64' },
    { name: 'a data URI without a comma', src: () => 'data:image/png;base64', code: 'invalid_data_uri' },
    { name: 'a data URI with a malformed header', src: () => 'data:image png;base64,iVBORw0KGgo=', code: 'invalid_data_uri' },
    { name: 'a data URI with a broken escape', src: () => 'data:application/pdf,%PDF-1.7%zz', code: 'invalid_data_uri' },
    { name: 'an empty data URI', src: () => 'data:image/png;base64,', code: 'empty_content' },
    { name: 'whitespace only', src: () => '   \n  ', code: 'empty_content' },
  ];

  for (const r of rejects) {
    it(`rejects ${r.name} with ${r.code} and creates nothing`, async () => {
      const { emergencyId, path: p } = await fx.newEmergency();
      const res = await fx.api.post(p, { content: 'x', attachments: [files.dataUri('image/gif', files.gif(1, 1)), { src: r.src() }] });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.equal(res.body.detail.error, r.code, JSON.stringify(res.body));
      assert.equal(res.body.detail.index, 1);
      assert.equal(typeof res.body.detail.message, 'string');
      assert.deepEqual(await fx.counts(emergencyId), { messages: 0, attachments: 0, conversations: 0, audits: (await fx.counts()).audits });
    });
  }

  it('rejects bytes over 10 MiB with too_large, and accepts exactly 10 MiB', async () => {
    const limit = 10 * 1024 * 1024;
    const big = Buffer.concat([files.pdf(), Buffer.alloc(limit - files.pdf().length + 1, 0x20)]);
    const over = await fx.api.post(path, { attachments: { data: big.toString('base64') } });
    assert.equal(over.status, 422);
    assert.deepEqual([over.body.detail.error, over.body.detail.index], ['too_large', 0]);
    const exact = await fx.api.post(path, { attachments: { data: big.subarray(0, limit).toString('base64') } });
    assert.equal(exact.status, 201, JSON.stringify(exact.body));
    assert.equal(exact.body.attachments[0].sizeBytes, limit);
  });

  it('returns url null when no public base URL is configured', async () => {
    const other = await messagesFixture({ ATTACHMENT_STORE: `file:${storeDir}` });
    try {
      const { path: p } = await other.newEmergency();
      const res = await other.api.post(p, { attachments: files.png(2, 2).toString('base64') });
      assert.equal(res.status, 201);
      assert.equal(res.body.attachments[0].url, null);
      assert.equal(res.body.attachments[0].sizeBytes, files.png(2, 2).length);
    } finally {
      await other.server.close();
    }
  });
});
