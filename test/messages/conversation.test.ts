import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type MessagesFixture, messagesFixture } from './setup.js';

/**
 * The emergency's conversation is created by its first message and remembered afterwards, so later
 * posts need no lookup. Only a committed conversation may be remembered: a first post whose
 * transaction is rolled back after creating it must leave the next post working.
 */
describe('messages: the conversation', () => {
  let fx: MessagesFixture;
  before(async () => {
    fx = await messagesFixture();
    // The database refuses one message text: the failure comes after the conversation's insert, in the same transaction.
    const db = fx.server.ctx.db.db;
    if (fx.server.ctx.db.dialect === 'postgres') {
      await sql`create function refuse_marked_message() returns trigger language plpgsql as $$
        begin raise exception 'refused by the database'; end $$`.execute(db);
      await sql`create trigger refuse_marked_message before insert on messages for each row
        when (new.content = 'refused by the database') execute function refuse_marked_message()`.execute(db);
    } else {
      await sql`create trigger refuse_marked_message before insert on messages
        when new.content = 'refused by the database' begin select raise(abort, 'refused by the database'); end`.execute(db);
    }
  });
  after(() => fx.server.close());

  it('every message of an emergency shares one conversation, from the first post on', async () => {
    const { emergencyId, path } = await fx.newEmergency();
    const posts = await Promise.all(Array.from({ length: 8 }, (_, i) => fx.api.post(path, { content: `update ${i}` })));
    for (const post of posts) assert.equal(post.status, 201);
    const ids = new Set(posts.map((p) => p.body.conversationId));
    assert.equal(ids.size, 1);
    const later = await fx.api.post(path, { content: 'later' });
    assert.equal(later.status, 201);
    assert.equal(later.body.conversationId, posts[0]!.body.conversationId);
    assert.equal((await fx.counts(emergencyId)).conversations, 1);
  });

  it('a later post with attachments is stored whole: message, attachments in order and audit entry', async () => {
    const { emergencyId, path } = await fx.newEmergency();
    assert.equal((await fx.api.post(path, { content: 'first' })).status, 201);
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
    const later = await fx.api.post(path, {
      content: 'photos',
      author: { type: 'agent', name: 'Dispatch bot' },
      attachments: [
        { src: 'https://cdn.example.com/cam/1.jpg', caption: 'camera 1' },
        { src: `data:image/png;base64,${png.toString('base64')}`, caption: 'door' },
      ],
    });
    assert.equal(later.status, 201, JSON.stringify(later.body));
    assert.deepEqual(
      later.body.attachments.map((a: { source: string; caption: string; width: number | null }) => [a.source, a.caption, a.width]),
      [
        ['url', 'camera 1', null],
        ['data_uri', 'door', 1],
      ],
    );
    const listed = await fx.api.get(path);
    const stored = listed.body.items.find((m: { messageId: string }) => m.messageId === later.body.messageId);
    assert.deepEqual(stored, later.body);
    const counts = await fx.counts(emergencyId);
    assert.equal(counts.messages, 2);
    assert.equal(counts.attachments, 2);
    const audit = await fx.server.ctx.db.db
      .selectFrom('audit_logs')
      .select(['event_type', 'details'])
      .where('resource_id', '=', later.body.messageId)
      .execute();
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.event_type, 'message.posted');
    assert.equal(JSON.parse(audit[0]!.details ?? '{}').attachments.length, 2);
  });

  it('a first post rolled back after creating the conversation leaves none behind, and the next post works', async () => {
    const { emergencyId, path } = await fx.newEmergency();
    const refused = await fx.api.post(path, { content: 'refused by the database' });
    assert.equal(refused.status, 500);
    assert.doesNotMatch(JSON.stringify(refused.body), /refused by the database|trigger|insert/i);
    const before = await fx.counts(emergencyId);
    assert.equal(before.messages, 0);
    assert.equal(before.conversations, 0);
    const next = await fx.api.post(path, { content: 'second try' });
    assert.equal(next.status, 201);
    const stored = await fx.server.ctx.db.db.selectFrom('conversations').select('id').where('emergency_id', '=', emergencyId).execute();
    assert.deepEqual(
      stored.map((r) => r.id),
      [next.body.conversationId],
    );
    const listed = await fx.api.get(path);
    assert.deepEqual(
      listed.body.items.map((m: { content: string }) => m.content),
      ['second try'],
    );
  });

  it('an emergency of another org, or none, is 404 whether or not it has a conversation', async () => {
    const { path } = await fx.newEmergency();
    assert.equal((await fx.api.post(path, { content: 'first' })).status, 201);
    const other = await messagesFixture({}, fx.server);
    const foreign = path.replace(fx.orgId, other.orgId);
    const res = await other.api.post(foreign, { content: 'not yours' });
    assert.equal(res.status, 404);
    assert.equal(res.body.detail.error, 'emergency_not_found');
    const missing = await fx.api.post(`/orgs/${fx.orgId}/emergencies/00000000-0000-4000-8000-000000000001/messages`, { content: 'x' });
    assert.equal(missing.status, 404);
  });
});
