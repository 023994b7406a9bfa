import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { client } from '../helpers/http.js';
import { mintKey } from '../helpers/server.js';
import * as files from './fixtures.js';
import { type MessagesFixture, messagesFixture } from './setup.js';

const LINK = 'https://media.example.com/cam/live.m3u8';

describe('messages: request forms, validation and access', () => {
  let fx: MessagesFixture;
  let path: string;
  let emergencyId: string;
  before(async () => {
    fx = await messagesFixture();
    ({ path, emergencyId } = await fx.newEmergency());
  });
  after(() => fx.server.close());

  it('posts a text message; source is the author type; conversation is shared', async () => {
    const first = await fx.api.post(path, { content: 'Fire on floor 2', author: { type: 'agent', name: 'Dispatcher bot' } });
    assert.equal(first.status, 201);
    assert.deepEqual(Object.keys(first.body).sort(), ['attachments', 'content', 'conversationId', 'createdAt', 'messageId', 'source']);
    assert.equal(first.body.content, 'Fire on floor 2');
    assert.equal(first.body.source, 'agent');
    assert.deepEqual(first.body.attachments, []);
    assert.match(first.body.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const second = await fx.api.post(path, { content: 'Fire on floor 2', author: { type: 'user', name: null } });
    assert.equal(second.status, 201);
    assert.notEqual(second.body.messageId, first.body.messageId, 'text-only messages are never deduplicated');
    assert.equal(second.body.conversationId, first.body.conversationId);
    assert.equal(second.body.source, 'user');
    const third = await fx.api.post(path, { content: 'no author' });
    assert.equal(third.body.source, null);
  });

  it('audits message.posted in the same write', async () => {
    const res = await fx.api.post(path, { content: 'audited', author: { type: 'system' } }, { 'x-request-id': 'req-msg-audit-1' });
    assert.equal(res.status, 201);
    const entry = await fx.server.ctx.db.db
      .selectFrom('audit_logs')
      .selectAll()
      .where('org_id', '=', fx.orgId)
      .where('resource_id', '=', res.body.messageId)
      .executeTakeFirstOrThrow();
    assert.equal(entry.event_category, 'message');
    assert.equal(entry.event_type, 'message.posted');
    assert.equal(entry.resource_type, 'message');
    assert.equal(entry.actor_type, 'api_key');
    assert.equal(entry.request_id, 'req-msg-audit-1');
    assert.equal(JSON.parse(entry.details!).emergencyId, emergencyId);
  });

  const gif = () => files.gif(2, 3);
  const forms: { name: string; body: () => unknown; expect: { src: string; caption?: string | null }[] }[] = [
    { name: 'attachments: list of items with src', body: () => ({ attachments: [{ src: LINK }] }), expect: [{ src: LINK }] },
    { name: 'attachments: single item outside a list', body: () => ({ attachments: { src: LINK, caption: 'c' } }), expect: [{ src: LINK, caption: 'c' }] },
    { name: 'attachments: bare string outside a list', body: () => ({ attachments: LINK }), expect: [{ src: LINK }] },
    {
      name: 'attachments: list of bare strings',
      body: () => ({ attachments: [LINK, 'https://a.example.org/b.png'] }),
      expect: [{ src: LINK }, { src: 'https://a.example.org/b.png' }],
    },
    { name: 'attachment: singular alias with a list', body: () => ({ attachment: [{ src: LINK }] }), expect: [{ src: LINK }] },
    { name: 'attachment: singular alias with one item', body: () => ({ attachment: { url: LINK } }), expect: [{ src: LINK }] },
    { name: 'attachment: singular alias with a bare string', body: () => ({ attachment: LINK }), expect: [{ src: LINK }] },
    { name: 'item key content', body: () => ({ attachments: [{ content: LINK }] }), expect: [{ src: LINK }] },
    { name: 'item key url', body: () => ({ attachments: [{ url: LINK }] }), expect: [{ src: LINK }] },
    { name: 'item key data', body: () => ({ attachments: [{ data: LINK }] }), expect: [{ src: LINK }] },
    {
      name: 'src wins over content, url and data',
      body: () => ({ attachments: [{ data: 'https://d.example.com/', url: 'https://u.example.com/', content: 'https://c.example.com/', src: LINK }] }),
      expect: [{ src: LINK }],
    },
    {
      name: 'content wins over url and data',
      body: () => ({ attachments: [{ data: 'https://d.example.com/', url: 'https://u.example.com/', content: LINK }] }),
      expect: [{ src: LINK }],
    },
    { name: 'url wins over data', body: () => ({ attachments: [{ data: 'https://d.example.com/', url: LINK }] }), expect: [{ src: LINK }] },
    { name: 'unknown item fields are ignored', body: () => ({ attachments: [{ src: LINK, foo: 1, nested: { a: 1 } }] }), expect: [{ src: LINK }] },
    { name: 'null attachments with content', body: () => ({ content: 'x', attachments: null }), expect: [] },
  ];
  for (const form of forms) {
    it(`accepts ${form.name}`, async () => {
      const res = await fx.api.post(path, form.body());
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.deepEqual(
        res.body.attachments.map((a: any) => ({ src: a.url, ...('caption' in (form.expect[0] ?? {}) ? { caption: a.caption } : {}) })),
        form.expect,
      );
    });
  }

  it('type aliases: type, mimeType, kind (first match wins); inline bytes ignore them', async () => {
    const res = await fx.api.post(path, {
      attachments: [
        { src: 'https://x.example.com/a', type: 'video/mp4' },
        { src: 'https://x.example.com/b', mimeType: 'image/jpeg' },
        { src: 'https://x.example.com/c', kind: 'file' },
        { src: 'https://x.example.com/d', type: 'audio', mimeType: 'video/mp4', kind: 'image' },
        { data: gif().toString('base64'), type: 'application/pdf' },
      ],
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(
      res.body.attachments.map((a: any) => [a.kind, a.mimeType]),
      [
        ['video', 'video/mp4'],
        ['image', 'image/jpeg'],
        ['file', null],
        ['audio', null],
        ['image', 'image/gif'],
      ],
    );
  });

  const invalid: { name: string; body: unknown; loc: (string | number)[]; type: string }[] = [
    { name: 'unknown top-level field', body: { content: 'x', priority: 'high' }, loc: ['body', 'priority'], type: 'extra_forbidden' },
    {
      name: 'unknown author field',
      body: { content: 'x', author: { type: 'agent', email: 'a@b.c' } },
      loc: ['body', 'author', 'email'],
      type: 'extra_forbidden',
    },
    { name: 'author without type', body: { content: 'x', author: { name: 'n' } }, loc: ['body', 'author', 'type'], type: 'missing' },
    { name: 'author type outside the list', body: { content: 'x', author: { type: 'robot' } }, loc: ['body', 'author', 'type'], type: 'enum' },
    {
      name: 'author name over 128',
      body: { content: 'x', author: { type: 'user', name: 'n'.repeat(129) } },
      loc: ['body', 'author', 'name'],
      type: 'too_long',
    },
    { name: 'content over 4000', body: { content: 'c'.repeat(4001) }, loc: ['body', 'content'], type: 'too_long' },
    { name: 'content not a string', body: { content: 5 }, loc: ['body', 'content'], type: 'string_type' },
    { name: 'six attachments', body: { attachments: Array(6).fill(LINK) }, loc: ['body', 'attachments'], type: 'too_long' },
    { name: 'item without any src alias', body: { attachments: [{ caption: 'x' }] }, loc: ['body', 'attachments', 0, 'src'], type: 'missing' },
    { name: 'item src empty', body: { attachments: [{ src: '' }] }, loc: ['body', 'attachments', 0, 'src'], type: 'too_short' },
    { name: 'item url not a string', body: { attachment: { url: 42 } }, loc: ['body', 'attachment', 'url'], type: 'string_type' },
    { name: 'bare empty string', body: { attachments: '' }, loc: ['body', 'attachments'], type: 'too_short' },
    { name: 'item of a wrong type', body: { attachments: [7] }, loc: ['body', 'attachments', 0], type: 'model_type' },
    {
      name: 'caption over 512',
      body: { attachments: [{ src: LINK, caption: 'c'.repeat(513) }] },
      loc: ['body', 'attachments', 0, 'caption'],
      type: 'too_long',
    },
    {
      name: 'type over 255',
      body: { attachments: [{ src: LINK, mimeType: `a/${'b'.repeat(254)}` }] },
      loc: ['body', 'attachments', 0, 'mimeType'],
      type: 'too_long',
    },
    { name: 'both attachments and attachment', body: { attachments: [LINK], attachment: LINK }, loc: ['body', 'attachment'], type: 'value_error' },
    { name: 'neither content nor attachments', body: { content: '' }, loc: ['body', 'content'], type: 'value_error' },
    { name: 'an empty body object', body: {}, loc: ['body', 'content'], type: 'value_error' },
  ];
  for (const c of invalid) {
    it(`422 field error: ${c.name}`, async () => {
      const res = await fx.api.post(path, c.body);
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.ok(Array.isArray(res.body.detail), JSON.stringify(res.body));
      assert.ok(
        res.body.detail.some((d: any) => JSON.stringify(d.loc) === JSON.stringify(c.loc) && d.type === c.type),
        JSON.stringify(res.body.detail),
      );
    });
  }

  it('accepts the exact limits', async () => {
    const res = await fx.api.post(path, {
      content: 'c'.repeat(4000),
      author: { type: 'user', name: 'n'.repeat(128) },
      attachments: Array.from({ length: 5 }, (_, i) => ({ src: `${LINK}?i=${i}`, caption: 'k'.repeat(512), type: `video/mp4; codecs=${'x'.repeat(237)}` })),
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.attachments.length, 5);
  });

  it('rejects a body that is not JSON: 422 for bad JSON, 415 for another content type', async () => {
    const bad = await fx.api.post(path, '{"content": ', { 'content-type': 'application/json' });
    assert.equal(bad.status, 422);
    const text = await fx.api.post(path, 'hello', { 'content-type': 'text/plain' });
    assert.equal(text.status, 415);
    assert.equal(text.body.detail.error, 'unsupported_media_type');
  });

  it("404 for an unknown emergency, another org's emergency, or a malformed id; 422 for a malformed org id", async () => {
    const other = await messagesFixture({}, fx.server);
    const { path: foreign } = await other.newEmergency();
    const foreignId = foreign.split('/')[4];
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', foreignId]) {
      const res = await fx.api.post(`/orgs/${fx.orgId}/emergencies/${id}/messages`, { content: 'x' });
      assert.equal(res.status, 404, id);
      assert.equal(res.body.detail.error, 'emergency_not_found');
    }
    const badOrg = await fx.api.post(`/orgs/nope/emergencies/${emergencyId}/messages`, { content: 'x' });
    assert.equal(badOrg.status, 422);
    assert.deepEqual(badOrg.body.detail[0].loc, ['path', 'org_id']);
  });

  it('401 without a key, 403 for another org and for a read-only key', async () => {
    const anonymous = await client(fx.server.base).post(path, { content: 'x' });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer');
    const other = await messagesFixture({}, fx.server);
    const notCovered = await other.api.post(path, { content: 'x' });
    assert.equal(notCovered.status, 403);
    assert.equal(notCovered.body.detail.error, 'org_not_covered');
    const { key } = await mintKey(fx.server.ctx, { subjectType: 'org', subjectId: fx.orgId, permissions: ['read'] });
    const readOnly = await client(fx.server.base, key).post(path, { content: 'x' });
    assert.equal(readOnly.status, 403);
    assert.equal(readOnly.body.detail.error, 'permission_denied');
  });

  it('accepts messages on a resolved emergency (after-action notes)', async () => {
    const { emergencyId: id, path: p } = await fx.newEmergency();
    const resolved = await fx.api.post(`/orgs/${fx.orgId}/emergencies/${id}/resolutions`, {});
    assert.equal(resolved.status, 201);
    const res = await fx.api.post(p, { content: 'after action', author: { type: 'user' } });
    assert.equal(res.status, 201);
  });

  it('accepts bodies over the 1 MiB default on this route, up to 64 MiB; larger is 413', async () => {
    const big = await fx.api.post(path, { content: 'big', attachments: [files.pdf().toString('base64'), 'x'.repeat(3 * 1024 * 1024)] });
    assert.equal(big.status, 422, 'read and parsed, then rejected for its content');
    assert.equal(big.body.detail.error, 'unsupported_media_type');
    assert.equal(big.body.detail.index, 1);
    const huge = await fx.api.post(path, JSON.stringify({ content: 'x', pad: 'p'.repeat(64 * 1024 * 1024) }));
    assert.equal(huge.status, 413);
    assert.equal(huge.body.detail.error, 'payload_too_large');
    const declareBig = await fx.api.post(`/orgs/${fx.orgId}/emergencies`, { description: 'd'.repeat(2 * 1024 * 1024) });
    assert.equal(declareBig.status, 413, 'other routes keep their own limit');
  });

  it('documents the route and every rejection code in the OpenAPI description', async () => {
    const doc = (await client(fx.server.base).get('/openapi.json')).body;
    const op = doc.paths['/orgs/{org_id}/emergencies/{emergency_id}/messages'].post;
    for (const code of [
      'invalid_base64',
      'invalid_data_uri',
      'empty_content',
      'too_large',
      'unsupported_media_type',
      'invalid_url',
      'scheme_not_allowed',
      'port_not_allowed',
      'host_not_allowed',
      'credentials_not_allowed',
    ]) {
      assert.ok(op.description.includes(`\`${code}\``), code);
    }
    assert.ok(op.responses['201'] && op.responses['422'] && op.responses['503']);
    const schema422 = JSON.stringify(op.responses['422']);
    assert.ok(schema422.includes('HTTPValidationError') && schema422.includes('AttachmentRejection'), schema422);
  });
});
