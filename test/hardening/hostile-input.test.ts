import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { isPublicAddress } from '../../src/domain/outbound/public-host.js';
import { checkWebhookUrl } from '../../src/domain/outbound/webhook-url.js';
import { clientErrorHandler } from '../../src/http/framework-errors.js';
import { client } from '../helpers/http.js';
import { connectMcp, rawMcp } from '../helpers/mcp.js';
import { mintKey, type OrgFixture, startOrgServer, startTestServer, createOrgTree, type TestServer } from '../helpers/server.js';

/** A body nested `depth` levels: {"a":{"a":...{}}}. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

/** One raw HTTP exchange on a fresh socket: what Node's parser answers before any route runs. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    socket.write(request);
  });
}

function bodyOf(rawResponse: string): any {
  return JSON.parse(rawResponse.slice(rawResponse.indexOf('\r\n\r\n') + 4));
}

describe('hostile input', () => {
  let server: TestServer;
  let org: OrgFixture;
  let api: ReturnType<typeof client>;
  let key: string;
  let emergencyId: string;

  before(async () => {
    ({ server, org, api } = await startOrgServer());
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'target' });
    assert.equal(declared.status, 201);
    emergencyId = declared.body.emergencyId;
  });
  after(() => server.close());

  it('takes text with lone surrogates in every text field of a declare and answers it back unchanged', async () => {
    // JSON lets a request carry half of a surrogate pair ("\ud800"): such text is stored (as UTF-8,
    // with U+FFFD in its place, in the text columns) and the stored record, JSON text, keeps it escaped.
    const text = { description: 'a\ud800b', source: 'c\udc00', externalId: `lone-\ud83d-${Date.now()}`, metadata: { note: 'd\ud800' } };
    const declared = await api.post(`/orgs/${org.orgId}/emergencies`, text);
    assert.equal(declared.status, 201, JSON.stringify(declared.body));
    const read = await api.get(`/orgs/${org.orgId}/emergencies/${declared.body.emergencyId}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.description, text.description);
    assert.equal(read.body.source, text.source);
    assert.deepEqual(read.body.metadata, text.metadata);
  });

  describe('U+0000 in text is a 422 string_nul at the field, on every input', () => {
    const nul = 'a\u0000b';
    const cases: [string, () => Promise<{ status: number; body: any }>, (string | number)[]][] = [
      ['declare description', () => api.post(`/orgs/${org.orgId}/emergencies`, { description: nul }), ['body', 'description']],
      ['declare externalId', () => api.post(`/orgs/${org.orgId}/emergencies`, { externalId: nul }), ['body', 'externalId']],
      ['declare source', () => api.post(`/orgs/${org.orgId}/emergencies`, { source: nul }), ['body', 'source']],
      ['declare categoryName', () => api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: nul }), ['body', 'categoryName']],
      ['declare floorId', () => api.post(`/orgs/${org.orgId}/emergencies`, { location: { floorId: nul } }), ['body', 'location', 'floorId']],
      ['declaredBy name', () => api.post(`/orgs/${org.orgId}/emergencies`, { declaredBy: { id: 'u1', name: nul } }), ['body', 'declaredBy', 'name']],
      ['metadata value', () => api.post(`/orgs/${org.orgId}/emergencies`, { metadata: { note: [1, nul] } }), ['body', 'metadata', 'note', 1]],
      ['metadata key', () => api.post(`/orgs/${org.orgId}/emergencies`, { metadata: { [nul]: 1 } }), ['body', 'metadata', nul]],
      ['recategorize', () => api.patch(`/orgs/${org.orgId}/emergencies/${emergencyId}`, { categoryName: nul }), ['body', 'categoryName']],
      ['resolution note', () => api.post(`/orgs/${org.orgId}/emergencies/${emergencyId}/resolutions`, { resolutionNote: nul }), ['body', 'resolutionNote']],
      ['message content', () => api.post(`/orgs/${org.orgId}/emergencies/${emergencyId}/messages`, { content: nul }), ['body', 'content']],
      [
        'message author',
        () => api.post(`/orgs/${org.orgId}/emergencies/${emergencyId}/messages`, { content: 'x', author: { type: 'user', name: nul } }),
        ['body', 'author', 'name'],
      ],
      [
        'attachment caption',
        () => api.post(`/orgs/${org.orgId}/emergencies/${emergencyId}/messages`, { attachments: [{ src: 'https://example.com/a.png', caption: nul }] }),
        ['body', 'attachments', 0, 'caption'],
      ],
      ['list filter', () => api.get(`/orgs/${org.orgId}/emergencies?externalId=a%00b`), ['query', 'externalId']],
      ['list cursor', () => api.get(`/orgs/${org.orgId}/emergencies?cursor=a%00b`), ['query', 'cursor']],
      ['audit filter', () => api.get(`/orgs/${org.orgId}/audit-logs?actorId=a%00b`), ['query', 'actorId']],
      ['users cursor', () => api.get(`/orgs/${org.orgId}/users?cursor=a%00b`), ['query', 'cursor']],
      ['emergency id', () => api.get(`/orgs/${org.orgId}/emergencies/a%00b`), ['path', 'emergency_id']],
    ];
    for (const [name, send, loc] of cases) {
      it(name, async () => {
        const res = await send();
        assert.equal(res.status, 422, JSON.stringify(res.body));
        assert.deepEqual(res.body.detail[0].loc, loc);
        assert.equal(res.body.detail[0].type, 'string_nul');
      });
    }

    it('in tool arguments', async () => {
      const mcp = await connectMcp(server.url, key);
      try {
        const created = await mcp.fail('create_emergency', { orgId: org.orgId, description: nul });
        assert.equal(created.status, 422);
        assert.deepEqual(created.issues[0], { loc: ['description'], msg: created.issues[0].msg, type: 'string_nul' });
        const listed = await mcp.fail('list_emergencies', { orgId: org.orgId, externalId: nul });
        assert.deepEqual(listed.issues[0].loc, ['externalId']);
        assert.equal(listed.issues[0].type, 'string_nul');
      } finally {
        await mcp.close();
      }
    });
  });

  describe('nesting depth', () => {
    it('metadata deeper than 16 levels is 422 too_deep; 16 levels are accepted', async () => {
      const deep = await api.post(`/orgs/${org.orgId}/emergencies`, { metadata: nested(17) });
      assert.equal(deep.status, 422);
      assert.deepEqual(deep.body.detail, [{ loc: ['body', 'metadata'], msg: deep.body.detail[0].msg, type: 'too_deep' }]);
      const ok = await api.post(`/orgs/${org.orgId}/emergencies`, { metadata: nested(16) });
      assert.equal(ok.status, 201);
      assert.deepEqual(ok.body.metadata, nested(16));
    });

    it('a body nested 3,000 levels is 422 json_invalid at the body, and the server keeps answering', async () => {
      const text = `{"metadata":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`;
      for (const path of [`/orgs/${org.orgId}/emergencies`, `/orgs/${org.orgId}/emergencies/${emergencyId}/resolutions`]) {
        const res = await api.post(path, text);
        assert.equal(res.status, 422);
        assert.deepEqual(res.body.detail[0].loc, ['body']);
        assert.equal(res.body.detail[0].type, 'json_invalid');
      }
      assert.equal((await api.get(`/orgs/${org.orgId}/emergencies/${emergencyId}`)).status, 200);
    });

    it('tool arguments too', async () => {
      const mcp = await connectMcp(server.url, key);
      try {
        const tooDeep = await mcp.fail('create_emergency', { orgId: org.orgId, metadata: nested(17) });
        assert.deepEqual(tooDeep.issues, [{ loc: ['metadata'], msg: tooDeep.issues[0].msg, type: 'too_deep' }]);
        const wayTooDeep = await mcp.fail('create_emergency', { orgId: org.orgId, metadata: nested(3000) });
        assert.equal(wayTooDeep.issues[0].type, 'json_invalid');
      } finally {
        await mcp.close();
      }
    });
  });

  describe('org ids in upper case name the same org', () => {
    it('on every REST route', async () => {
      const upper = org.orgId.toUpperCase();
      const declared = await api.post(`/orgs/${upper}/emergencies`, { externalId: 'upper-1', categoryName: 'Fire' });
      assert.equal(declared.status, 201);
      assert.equal(declared.body.orgId, org.orgId);
      const listed = await api.get(`/orgs/${upper}/emergencies?externalId=upper-1`);
      assert.equal(listed.status, 200);
      assert.deepEqual(
        listed.body.items.map((e: any) => e.emergencyId),
        [declared.body.emergencyId],
      );
      const read = await api.get(`/orgs/${upper}/emergencies/${declared.body.emergencyId}`);
      assert.equal(read.status, 200);
      assert.equal(read.body.emergencyId, declared.body.emergencyId);
      const patched = await api.patch(`/orgs/${upper}/emergencies/${declared.body.emergencyId}`, { categoryName: 'Medical' });
      assert.equal(patched.status, 200);
      const message = await api.post(`/orgs/${upper}/emergencies/${declared.body.emergencyId}/messages`, { content: 'hello' });
      assert.equal(message.status, 201);
      const audit = await api.get(`/orgs/${upper}/audit-logs?eventCategory=emergency`);
      assert.equal(audit.status, 200);
      assert.ok(audit.body.items.some((entry: any) => entry.resource?.id === declared.body.emergencyId));
      assert.equal((await api.get(`/orgs/${upper}/emergencies/categories`)).status, 200);
    });

    it('in tool arguments', async () => {
      const mcp = await connectMcp(server.url, key);
      try {
        const created = await mcp.ok('create_emergency', { orgId: org.orgId.toUpperCase(), externalId: 'upper-mcp' });
        assert.equal(created.orgId, org.orgId);
        const listed = await mcp.ok('list_emergencies', { orgId: org.orgId.toUpperCase(), externalId: 'upper-mcp' });
        assert.equal(listed.items.length, 1);
        const read = await mcp.ok('get_emergency', { orgId: org.orgId.toUpperCase(), emergencyId: created.emergencyId });
        assert.equal(read.emergencyId, created.emergencyId);
      } finally {
        await mcp.close();
      }
    });
  });

  describe('one outbound-URL policy', () => {
    it('refuses IPv4-compatible IPv6 for webhook targets and link attachments alike', async () => {
      for (const address of ['::127.0.0.1', '::7f00:1', '::10.0.0.1', '::ffff:127.0.0.1']) assert.equal(isPublicAddress(address), false, address);
      const webhook = checkWebhookUrl('https://[::127.0.0.1]/', false);
      assert.equal(webhook.ok, false);
      const link = await api.post(`/orgs/${org.orgId}/emergencies/${emergencyId}/messages`, { attachment: 'https://[::127.0.0.1]/cam.m3u8' });
      assert.equal(link.status, 422);
      assert.equal(link.body.detail.error, 'host_not_allowed');
      assert.equal(checkWebhookUrl('https://[2606:4700:4700::1111]/hook', false).ok, true);
    });
  });

  describe('every error has the service error body', () => {
    it('an emergency id of any length that names no emergency is 404 emergency_not_found', async () => {
      for (const length of [101, 128, 129, 5000]) {
        const id = 'e'.repeat(length);
        for (const res of [
          await api.get(`/orgs/${org.orgId}/emergencies/${id}`),
          await api.patch(`/orgs/${org.orgId}/emergencies/${id}`, { categoryName: 'Fire' }),
          await api.post(`/orgs/${org.orgId}/emergencies/${id}/resolutions`, {}),
          await api.post(`/orgs/${org.orgId}/emergencies/${id}/messages`, { content: 'x' }),
        ]) {
          assert.equal(res.status, 404, `${length}: ${JSON.stringify(res.body).slice(0, 200)}`);
          assert.equal(res.body.detail.error, 'emergency_not_found');
        }
      }
    });

    it('bad percent-encoding, unknown routes, oversized bodies and media types', async () => {
      const badUrl = await api.get(`/orgs/${org.orgId}/emergencies/%zz`);
      assert.equal(badUrl.status, 400);
      assert.equal(badUrl.body.detail.error, 'bad_request');
      assert.ok(badUrl.headers.get('x-request-id'));
      const unknown = await api.get('/nowhere');
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.detail.error, 'not_found');
      const big = await api.post(`/orgs/${org.orgId}/emergencies`, JSON.stringify({ description: 'x'.repeat(1024 * 1024 + 10) }));
      assert.equal(big.status, 413);
      assert.equal(big.body.detail.error, 'payload_too_large');
      const text = await api.post(`/orgs/${org.orgId}/emergencies`, 'hello', { 'content-type': 'text/plain' });
      assert.equal(text.status, 415);
      assert.equal(text.body.detail.error, 'unsupported_media_type');
      const mcpGet = await fetch(`${server.url}/mcp`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(mcpGet.status, 405);
      assert.equal((await mcpGet.json()).detail.error, 'method_not_allowed');
    });

    it('requests Node refuses before routing: malformed (400) and oversized headers (431)', async () => {
      const port = Number(new URL(server.url).port);
      const garbage = await rawExchange(port, 'NOT-HTTP\r\n\r\n');
      assert.match(garbage, /^HTTP\/1\.1 400 /);
      assert.equal(bodyOf(garbage).detail.error, 'bad_request');
      const huge = await rawExchange(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      assert.match(huge, /^HTTP\/1\.1 431 /);
      assert.equal(bodyOf(huge).detail.error, 'headers_too_large');
    });

    it('a request that took too long to arrive (408)', async () => {
      // Node reports it after requestTimeout (30 s); the handler's answer is checked on a real socket pair.
      const received = new Promise<string>((resolve) => {
        const listener = createServer((socket: Socket) => {
          const err = Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
          clientErrorHandler(err, socket);
        }).listen(0, '127.0.0.1', () => {
          const port = (listener.address() as { port: number }).port;
          void rawExchange(port, '').then((answer) => {
            listener.close();
            resolve(answer);
          });
        });
      });
      const answer = await received;
      assert.match(answer, /^HTTP\/1\.1 408 /);
      assert.equal(bodyOf(answer).detail.error, 'request_timeout');
    });
  });
});

describe('MCP batches', () => {
  let server: TestServer;
  let org: OrgFixture;

  before(async () => {
    // One request a second, a burst of two: a batch of three tool calls is more than any bucket holds.
    server = await startTestServer({ RATE_LIMIT_PER_KEY: '1' });
    org = await createOrgTree(server.ctx);
  });
  after(() => server.close());

  const createCall = (id: number, externalId: string) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'create_emergency', arguments: { orgId: org.orgId, externalId } },
  });
  const declaredWith = async (api: ReturnType<typeof client>, prefix: string) => {
    const listed = await api.get(`/orgs/${org.orgId}/emergencies?limit=200`);
    return listed.body.items.filter((e: any) => e.externalId?.startsWith(prefix)).length;
  };

  it('each tool call of a batch costs a token; a batch beyond the bucket is refused before any call runs', async () => {
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const batch = Array.from({ length: 100 }, (_, i) => createCall(i + 1, `batch-a-${i}`));
    const refused = await rawMcp(server.url, batch, { authorization: `Bearer ${key}`, 'mcp-protocol-version': '2025-03-26' });
    assert.equal(refused.status, 429);
    assert.equal(refused.message.detail.error, 'rate_limited');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    const reader = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    assert.equal(await declaredWith(reader, 'batch-a-'), 0);

    const { key: second } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const two = await rawMcp(server.url, [createCall(1, 'batch-b-1'), createCall(2, 'batch-b-2')], {
      authorization: `Bearer ${second}`,
      'mcp-protocol-version': '2025-03-26',
    });
    assert.equal(two.status, 200, two.text);
    assert.equal(await declaredWith(reader, 'batch-b-'), 2);
    // The batch used the whole burst: the next call of that key is refused.
    const next = await rawMcp(server.url, createCall(3, 'batch-b-3'), { authorization: `Bearer ${second}` });
    assert.equal(next.status, 429);
  });

  it('batches are refused under protocol versions that have none', async () => {
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    for (const version of ['2025-06-18', '2025-11-25']) {
      const res = await rawMcp(server.url, [createCall(1, `batch-c-${version}`)], { authorization: `Bearer ${key}`, 'mcp-protocol-version': version });
      assert.equal(res.status, 400);
      assert.equal(res.message.error.code, -32600);
      await new Promise((r) => setTimeout(r, 1100));
    }
    const reader = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    assert.equal(await declaredWith(reader, 'batch-c-'), 0);
  });
});

describe('unauthenticated floods', () => {
  let server: TestServer;
  let org: OrgFixture;

  before(async () => {
    server = await startTestServer({ AUTH_FAILURES_PER_ADDRESS: '1' });
    org = await createOrgTree(server.ctx);
  });
  after(() => server.close());

  const randomKey = () => `enk_live_${[...Array(72)].map(() => Math.floor(Math.random() * 16).toString(16)).join('')}`;

  it('failed authentication is throttled per address while a known key keeps working', async () => {
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const legit = client(server.base, key);
    const { key: unread } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    assert.equal((await legit.get(`/orgs/${org.orgId}/emergencies`)).status, 200);
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await client(server.base, randomKey()).get(`/orgs/${org.orgId}/emergencies`)).status);
    // A burst of five lookups of unread key ids (1/s × 5; the legitimate key's first use took one) are 401s; the rest of the
    // flood is 429 with Retry-After, without a lookup.
    assert.ok(
      statuses.slice(0, 4).every((s) => s === 401),
      statuses.join(','),
    );
    assert.equal(statuses.at(-1), 429);
    const throttled = await client(server.base, randomKey()).get(`/orgs/${org.orgId}/emergencies`);
    assert.equal(throttled.status, 429);
    assert.equal(throttled.body.detail.error, 'rate_limited');
    assert.ok(Number(throttled.headers.get('retry-after')) >= 1);
    // A key this process has never read (after a restart, or a new key) from the same address is served: it is stored.
    assert.equal((await client(server.base, unread).get(`/orgs/${org.orgId}/emergencies`)).status, 200);
    // The known key, even once its cached verdict is stale, is still looked up and served.
    await new Promise((r) => setTimeout(r, 2100));
    assert.equal((await legit.get(`/orgs/${org.orgId}/emergencies`)).status, 200);
  });

  it('unknown key ids are remembered without evicting real keys', async () => {
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const keys = server.app.services.keys;
    assert.ok(await keys.authenticate(key));
    const unknown = randomKey();
    assert.equal(keys.authenticateCached(unknown), undefined);
    assert.equal(await keys.authenticate(unknown), null);
    // Remembered: answered from memory, without a lookup.
    assert.equal(keys.authenticateCached(unknown), null);
    for (let i = 0; i < 2000; i++) await keys.authenticate(randomKey());
    // Still held (fresh or not: on a slow machine the flood outlasts the 2 s freshness of the entry).
    assert.ok(keys.knowsKeyIdOf(key), 'a flood of unknown ids must not push a real key out');
  });
});
