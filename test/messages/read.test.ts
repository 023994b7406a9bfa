import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { dataUri, png } from './fixtures.js';
import { type MessagesFixture, messagesFixture } from './setup.js';

/** Reading a conversation back: the messages, oldest first, and the stored bytes of inline attachments. */
describe('reading messages and attachment bytes', () => {
  let f: MessagesFixture;
  before(async () => {
    f = await messagesFixture();
  });
  after(() => f.server.close());

  it('lists the messages oldest first with their attachments, paged', async () => {
    const { emergencyId, path } = await f.newEmergency();
    const image = png(4, 3);
    const posted = [];
    posted.push((await f.api.post(path, { content: 'first', author: { type: 'user', name: 'Ada' } })).body);
    posted.push((await f.api.post(path, { content: 'with a photo', attachments: [{ src: dataUri('image/png', image), caption: 'hall' }] })).body);
    posted.push((await f.api.post(path, { content: 'a camera', attachments: ['https://cams.example.com/live/hall.m3u8'] })).body);
    const all = await f.api.get(path);
    assert.equal(all.status, 200);
    assert.deepEqual(all.body, { items: posted, nextCursor: null });
    const page1 = await f.api.get(`${path}?limit=2`);
    const page2 = await f.api.get(`${path}?limit=2&cursor=${page1.body.nextCursor}`);
    assert.deepEqual([...page1.body.items, ...page2.body.items], posted);

    const photo = posted[1].attachments[0];
    const anonymous = await fetch(`${f.server.base}/orgs/${f.orgId}/emergencies/${emergencyId}/attachments/${photo.attachmentId}/content`);
    assert.equal(anonymous.status, 401, 'the bytes need a key like every read');
    const res = await f.api.call('GET', `/orgs/${f.orgId}/emergencies/${emergencyId}/attachments/${photo.attachmentId}/content`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const link = posted[2].attachments[0];
    assert.equal((await f.api.get(`/orgs/${f.orgId}/emergencies/${emergencyId}/attachments/${link.attachmentId}/content`)).body.detail.error, 'not_found');
  });

  it('returns the exact bytes that were posted', async () => {
    const { emergencyId, path } = await f.newEmergency();
    const image = png(5, 5);
    const posted = (await f.api.post(path, { content: 'x', attachments: [dataUri('image/png', image)] })).body;
    const { key } = await mintKey(f.server.ctx, { subjectType: 'org', subjectId: f.orgId, permissions: ['read'] });
    const res = await fetch(`${f.server.base}/orgs/${f.orgId}/emergencies/${emergencyId}/attachments/${posted.attachments[0].attachmentId}/content`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), image);
  });

  it('keeps other organizations out: 403 for their org, 404 for their emergency under mine', async () => {
    const { emergencyId, path } = await f.newEmergency();
    await f.api.post(path, { content: 'private' });
    const other = await createOrgTree(f.server.ctx);
    const stranger = client(f.server.base, (await mintKey(f.server.ctx, { subjectType: 'org', subjectId: other.orgId })).key);
    assert.equal((await stranger.get(path)).status, 403);
    assert.equal((await stranger.get(`/orgs/${other.orgId}/emergencies/${emergencyId}/messages`)).body.detail.error, 'emergency_not_found');
    assert.equal((await f.api.get(`/orgs/${f.orgId}/emergencies/nope/messages`)).status, 404);
  });
});
