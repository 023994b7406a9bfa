import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as files from './fixtures.js';
import { type MessagesFixture, messagesFixture } from './setup.js';

describe('messages: deduplication of all-inline messages', () => {
  let fx: MessagesFixture;
  before(async () => {
    fx = await messagesFixture({ ATTACHMENT_PUBLIC_BASE_URL: 'https://cdn.example.com/' });
  });
  after(() => fx.server.close());

  const photo = () => files.dataUri('image/png', files.png(4, 4));
  const body = () => ({
    content: 'photo of the door',
    author: { type: 'agent', name: 'Cam' },
    attachments: [{ src: photo(), caption: 'door' }, files.pdf().toString('base64')],
  });

  it('returns the original message for an identical repost and creates nothing', async () => {
    const { emergencyId, path } = await fx.newEmergency();
    const first = await fx.api.post(path, body());
    assert.equal(first.status, 201);
    const again = await fx.api.post(path, body());
    assert.equal(again.status, 201);
    assert.deepEqual(again.body, first.body);
    assert.deepEqual(await fx.counts(emergencyId), { messages: 1, attachments: 2, conversations: 1, audits: (await fx.counts()).audits });
  });

  it('the same bytes sent as bare base64 instead of a data URI are the same payload', async () => {
    const { path } = await fx.newEmergency();
    const first = await fx.api.post(path, { attachments: [files.png(4, 4).toString('base64')] });
    const again = await fx.api.post(path, { attachments: [photo()] });
    assert.equal(again.body.messageId, first.body.messageId);
  });

  it('any difference makes a new message: content, author, caption, bytes, order, emergency', async () => {
    const { path } = await fx.newEmergency();
    const base = await fx.api.post(path, body());
    const variants = [
      { ...body(), content: 'other text' },
      { ...body(), author: { type: 'user', name: 'Cam' } },
      { ...body(), author: { type: 'agent', name: 'Other' } },
      { ...body(), author: undefined },
      { ...body(), attachments: [{ src: photo(), caption: 'window' }, files.pdf().toString('base64')] },
      { ...body(), attachments: [{ src: files.dataUri('image/png', files.png(5, 4)), caption: 'door' }, files.pdf().toString('base64')] },
      { ...body(), attachments: [files.pdf().toString('base64'), { src: photo(), caption: 'door' }] },
    ];
    const ids = new Set([base.body.messageId]);
    for (const v of variants) {
      const res = await fx.api.post(path, v);
      assert.equal(res.status, 201);
      ids.add(res.body.messageId);
    }
    assert.equal(ids.size, variants.length + 1);
    const { path: otherPath } = await fx.newEmergency();
    const elsewhere = await fx.api.post(otherPath, body());
    assert.notEqual(elsewhere.body.messageId, base.body.messageId);
  });

  it('never deduplicates text-only messages or messages carrying a link', async () => {
    const { emergencyId, path } = await fx.newEmergency();
    const text = { content: 'same words', author: { type: 'system' } };
    const withLink = { content: 'same', attachments: [photo(), 'https://cdn.example.com/live.m3u8'] };
    const ids = new Set<string>();
    for (const b of [text, text, withLink, withLink]) ids.add((await fx.api.post(path, b)).body.messageId);
    assert.equal(ids.size, 4);
    assert.equal((await fx.counts(emergencyId)).messages, 4);
  });

  it('two concurrent identical posts create one message and both get it', async () => {
    for (let round = 0; round < 3; round++) {
      const { emergencyId, path } = await fx.newEmergency();
      const payload = { content: `concurrent ${round}`, attachments: [photo()] };
      const results = await Promise.all([fx.api.post(path, payload), fx.api.post(path, payload), fx.api.post(path, payload)]);
      for (const r of results) assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(new Set(results.map((r) => r.body.messageId)).size, 1);
      assert.deepEqual(results[1]!.body, results[0]!.body);
      const counts = await fx.counts(emergencyId);
      assert.equal(counts.messages, 1);
      assert.equal(counts.conversations, 1);
    }
  });

  it('concurrent identical posts into a conversation that exists create one message and all get it', async () => {
    for (let round = 0; round < 3; round++) {
      const { emergencyId, path } = await fx.newEmergency();
      assert.equal((await fx.api.post(path, { content: 'the conversation starts' })).status, 201);
      const payload = { content: `concurrent in a conversation ${round}`, attachments: [photo()] };
      const results = await Promise.all(Array.from({ length: 5 }, () => fx.api.post(path, payload)));
      for (const r of results) assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(new Set(results.map((r) => r.body.messageId)).size, 1);
      for (const r of results.slice(1)) assert.deepEqual(r.body, results[0]!.body);
      const counts = await fx.counts(emergencyId);
      assert.equal(counts.messages, 2);
      assert.equal(counts.attachments, 1);
    }
  });

  it('after the window an identical post is a new message', async () => {
    const { emergencyId, path } = await fx.newEmergency();
    const first = await fx.api.post(path, body());
    // Age the dedupe entry past the 10-minute window instead of waiting.
    await fx.server.ctx.db.db
      .updateTable('message_dedupe')
      .set({ created_at: new Date(Date.now() - 601_000).toISOString() })
      .where('org_id', '=', fx.orgId)
      .where('message_id', '=', first.body.messageId)
      .execute();
    const later = await fx.api.post(path, body());
    assert.equal(later.status, 201);
    assert.notEqual(later.body.messageId, first.body.messageId);
    const again = await fx.api.post(path, body());
    assert.equal(again.body.messageId, later.body.messageId, 'the new message starts a new window');
    assert.equal((await fx.counts(emergencyId)).messages, 2);
  });

  it('MESSAGE_DEDUPE_WINDOW_SECONDS=0 turns deduplication off', async () => {
    const other = await messagesFixture({ MESSAGE_DEDUPE_WINDOW_SECONDS: '0' });
    try {
      const { path } = await other.newEmergency();
      const a = await other.api.post(path, body());
      const b = await other.api.post(path, body());
      assert.notEqual(a.body.messageId, b.body.messageId);
    } finally {
      await other.server.close();
    }
  });
});
