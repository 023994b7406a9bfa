import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { AttachmentStore, StoredObjectInput } from '../../src/domain/attachments/store.js';
import { startServer } from '../../src/server.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import * as files from './fixtures.js';
import { messagesFixture } from './setup.js';

/** A store whose backend is down: every write fails, as a full disk or an unreachable bucket would. */
class UnavailableStore implements AttachmentStore {
  readonly description = 'unavailable test store';
  puts = 0;
  async put(_object: StoredObjectInput): Promise<string> {
    this.puts++;
    throw new Error('backend unavailable: connection reset');
  }
  async get(): Promise<Buffer | null> {
    throw new Error('backend unavailable');
  }
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('messages: attachment storage', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('a store that throws gives 503 unavailable and leaves no message, conversation or audit entry', async () => {
    const database = freshDatabaseUrl();
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATABASE_URL: database.url });
    const store = new UnavailableStore();
    const ctx = { ...createContext(config), attachments: store };
    const running = await startServer(config, ctx);
    cleanups.push(async () => {
      await running.stop();
      await ctx.db.close();
      await database.drop();
    });
    const fx = await messagesFixture({}, { ctx, base: `${running.url}/api/public/v1`, close: running.stop });
    const { emergencyId, path } = await fx.newEmergency();
    const res = await fx.api.post(path, { content: 'photo', author: { type: 'agent' }, attachments: [files.dataUri('image/png', files.png(2, 2))] });
    assert.equal(res.status, 503);
    assert.equal(res.body.detail.error, 'unavailable');
    assert.doesNotMatch(JSON.stringify(res.body), /connection reset|stack|Error:/);
    assert.equal(store.puts, 1);
    assert.deepEqual(await fx.counts(emergencyId), { messages: 0, attachments: 0, conversations: 0, audits: 0 });
    // Text and links need no storage and still work.
    const text = await fx.api.post(path, { content: 'still here', attachments: ['https://cdn.example.com/live.m3u8'] });
    assert.equal(text.status, 201);
    // And the failed inline post is not remembered for deduplication.
    assert.equal((await fx.server.ctx.db.db.selectFrom('message_dedupe').selectAll().execute()).length, 0);
  });

  it('a filesystem store that cannot write gives 503 and no message', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attachments-broken-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'not-a-directory'), 'x');
    const fx = await messagesFixture({ ATTACHMENT_STORE: `file:${join(dir, 'not-a-directory', 'store')}` });
    cleanups.push(() => fx.server.close());
    const { emergencyId, path } = await fx.newEmergency();
    const res = await fx.api.post(path, { attachments: [files.pdf().toString('base64')] });
    assert.equal(res.status, 503);
    assert.equal((await fx.counts(emergencyId)).messages, 0);
  });

  describe('S3-compatible store', () => {
    let s3: S3rver;
    let endpoint: string;
    let fx: Awaited<ReturnType<typeof messagesFixture>>;
    before(async () => {
      const dir = mkdtempSync(join(tmpdir(), 's3rver-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: 'media', configs: [] }] });
      const address = await s3.run();
      cleanups.push(() => s3.close());
      endpoint = `http://127.0.0.1:${address.port}`;
      // The standard AWS credential environment; s3rver accepts this fixed pair.
      process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
      process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
      fx = await messagesFixture({
        ATTACHMENT_STORE: 's3://media/emergency/attachments',
        ATTACHMENT_S3_ENDPOINT: endpoint,
        ATTACHMENT_PUBLIC_BASE_URL: 'https://cdn.example.com',
      });
      cleanups.push(() => fx.server.close());
    });

    it('stores inline bytes under the prefix, content-addressed, and reads them back', async () => {
      const { path } = await fx.newEmergency();
      const photo = files.jpeg(800, 600);
      const video = files.mp4(640, 360);
      const res = await fx.api.post(path, { content: 'media', attachments: [files.dataUri('image/jpeg', photo), video.toString('base64')] });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const expected = [
        { bytes: photo, ext: 'jpg', mime: 'image/jpeg' },
        { bytes: video, ext: 'mp4', mime: 'video/mp4' },
      ];
      const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
      for (const [i, e] of expected.entries()) {
        const sha = createHash('sha256').update(e.bytes).digest('hex');
        const key = `emergency/attachments/${sha.slice(0, 2)}/${sha}.${e.ext}`;
        assert.equal(res.body.attachments[i].url, `https://cdn.example.com/${key}`);
        assert.deepEqual(await fx.server.ctx.attachments.get(key), e.bytes);
        const object = await client.send(new GetObjectCommand({ Bucket: 'media', Key: key }));
        assert.equal(object.ContentType, e.mime);
        assert.deepEqual(Buffer.from(await object.Body!.transformToByteArray()), e.bytes);
      }
      assert.deepEqual([res.body.attachments[1].width, res.body.attachments[1].height], [640, 360]);
      assert.equal(await fx.server.ctx.attachments.get('emergency/attachments/00/missing.png'), null);
      client.destroy();
    });

    it('an unreachable S3 endpoint gives 503 and no message', async () => {
      const down = await messagesFixture({
        ATTACHMENT_STORE: 's3://media/x',
        ATTACHMENT_S3_ENDPOINT: `http://127.0.0.1:${await closedPort()}`,
      });
      cleanups.push(() => down.server.close());
      const { emergencyId, path } = await down.newEmergency();
      const res = await down.api.post(path, { attachments: files.gif(1, 1).toString('base64') });
      assert.equal(res.status, 503);
      assert.equal((await down.counts(emergencyId)).messages, 0);
    });
  });
});
