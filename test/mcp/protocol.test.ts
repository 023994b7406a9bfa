import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { connectMcp, initializeRequest, rawMcp } from '../helpers/mcp.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

const READ_TOOLS = ['get_emergency', 'get_emergency_receipts', 'list_audit_logs', 'list_categories', 'list_emergencies', 'list_events'];
const ALL_TOOLS = [...READ_TOOLS, 'create_emergency', 'resolve_emergency', 'update_emergency'].sort();

describe('tool server protocol and access', () => {
  let server: TestServer;
  let org: OrgFixture;
  let writeKey: string;
  let readKey: string;
  let readKeyId: string;

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    writeKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    const read = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['read'], name: 'reader' });
    readKey = read.key;
    readKeyId = read.id;
  });
  after(() => server.close());

  it('answers 401 with WWW-Authenticate before reading the body when the key is missing or invalid', async () => {
    for (const authorization of [undefined, 'Bearer enk_live_0000000000000000000000000000000000000000000000000000000000000000000000000', 'Basic abc']) {
      for (const method of ['POST', 'GET', 'DELETE']) {
        const res = await fetch(`${server.url}/mcp`, {
          method,
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization ? { authorization } : {}) },
          // Not even JSON: the 401 must come first.
          ...(method === 'POST' ? { body: '{not json' } : {}),
        });
        assert.equal(res.status, 401, `${method} with ${authorization}`);
        // RFC 9728: where to get a credential; RFC 6750: a credential was presented and is not valid.
        const metadata = `resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp"`;
        assert.equal(res.headers.get('www-authenticate'), authorization ? `Bearer ${metadata}, error="invalid_token"` : `Bearer ${metadata}`);
        assert.equal((await res.json()).detail.error, 'unauthenticated');
      }
    }
  });

  it('the SDK client cannot connect without a valid key', async () => {
    await assert.rejects(connectMcp(server.url, 'enk_live_nope'));
  });

  it('negotiates protocol version 2024-11-05 on a raw initialize', async () => {
    const { status, headers, message } = await rawMcp(server.url, initializeRequest('2024-11-05'), { authorization: `Bearer ${writeKey}` });
    assert.equal(status, 200);
    assert.match(headers.get('content-type') ?? '', /^application\/json/);
    assert.ok(headers.get('x-request-id'));
    assert.match(headers.get('mcp-session-id') ?? '', /^[0-9a-f-]{36}$/, 'initialize opens a session');
    assert.equal(message.id, 1);
    assert.equal(message.result.protocolVersion, '2024-11-05');
    assert.ok(message.result.capabilities.tools);
    assert.equal(message.result.serverInfo.name, 'emergency-api');
  });

  it('negotiates newer and unknown versions as the SDK does', async () => {
    const newer = await rawMcp(server.url, initializeRequest('2025-06-18'), { authorization: `Bearer ${writeKey}` });
    assert.equal(newer.message.result.protocolVersion, '2025-06-18');
    const unknown = await rawMcp(server.url, initializeRequest('1999-01-01'), { authorization: `Bearer ${writeKey}` });
    assert.equal(unknown.message.result.protocolVersion, LATEST_PROTOCOL_VERSION);
  });

  it('answers as an SSE stream when the client prefers text/event-stream', async () => {
    const { status, headers, message, text } = await rawMcp(
      server.url,
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'list_categories', arguments: { orgId: org.orgId } } },
      { authorization: `Bearer ${writeKey}`, accept: 'text/event-stream, application/json', 'mcp-protocol-version': '2024-11-05' },
    );
    assert.equal(status, 200);
    assert.equal(headers.get('content-type'), 'text/event-stream');
    assert.match(text, /^event: message\n/);
    assert.equal(message.id, 7);
    assert.deepEqual(
      message.result.structuredContent.items.map((c: { name: string }) => c.name),
      ['Fire', 'Medical', 'Uncategorized'],
    );
  });

  it('serves the SDK client over SSE responses too', async () => {
    const mcp = await connectMcp(server.url, writeKey, { sse: true });
    try {
      const created = await mcp.ok('create_emergency', { orgId: org.orgId, description: 'over SSE' });
      assert.equal(created.status, 'declared');
      const read = await mcp.ok('get_emergency', { orgId: org.orgId, emergencyId: created.emergencyId });
      assert.deepEqual(read, created);
    } finally {
      await mcp.close();
    }
  });

  it('lists all seven tools, with described arguments, output schemas and annotations, to a read-write key', async () => {
    const mcp = await connectMcp(server.url, writeKey);
    try {
      const { tools } = await mcp.client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), ALL_TOOLS);
      for (const tool of tools) {
        assert.equal(tool.inputSchema.type, 'object');
        assert.deepEqual(tool.inputSchema.required?.includes('orgId'), true, tool.name);
        for (const [name, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
          assert.ok((schema as { description?: string }).description, `${tool.name}.${name} has a description`);
        }
        assert.equal(tool.outputSchema?.type, 'object', tool.name);
        assert.equal(typeof tool.annotations?.readOnlyHint, 'boolean');
        assert.equal(typeof tool.annotations?.idempotentHint, 'boolean');
        assert.equal(typeof tool.annotations?.destructiveHint, 'boolean');
        assert.equal(tool.annotations?.readOnlyHint, READ_TOOLS.includes(tool.name));
      }
      const create = tools.find((t) => t.name === 'create_emergency')!;
      assert.deepEqual(Object.keys(create.inputSchema.properties ?? {}).sort(), [
        'categoryId',
        'categoryName',
        'declaredBy',
        'description',
        'exercise',
        'externalId',
        'location',
        'metadata',
        'occurredAt',
        'orgId',
        'source',
      ]);
      const listEmergencies = tools.find((t) => t.name === 'list_emergencies')!;
      assert.deepEqual(Object.keys(listEmergencies.inputSchema.properties ?? {}).sort(), [
        'categoryId',
        'cursor',
        'exercise',
        'externalId',
        'limit',
        'orgId',
        'since',
        'status',
        'until',
      ]);
      const resolve = tools.find((t) => t.name === 'resolve_emergency')!;
      assert.deepEqual(Object.keys(resolve.inputSchema.properties ?? {}).sort(), [
        'emergencyId',
        'metadata',
        'orgId',
        'resolutionNote',
        'resolvedAt',
        'resolvedBy',
      ]);
    } finally {
      await mcp.close();
    }
  });

  it('shows a read-only key only the read tools, and refuses the hidden write tools', async () => {
    const mcp = await connectMcp(server.url, readKey);
    try {
      const { tools } = await mcp.client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), READ_TOOLS);
      const denied = await mcp.fail('create_emergency', { orgId: org.orgId, description: 'must not exist' });
      assert.equal(denied.status, 403);
      assert.equal(denied.error, 'permission_denied');
      const page = await mcp.ok('list_emergencies', { orgId: org.orgId, externalId: 'never' });
      assert.deepEqual(page, { items: [], nextCursor: null });
      const audit = await mcp.ok('list_audit_logs', { orgId: org.orgId, actorId: readKeyId });
      assert.deepEqual(audit.items, []);
    } finally {
      await mcp.close();
    }
    const count = await server.ctx.db.db
      .selectFrom('emergencies')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('description', '=', 'must not exist')
      .executeTakeFirstOrThrow();
    assert.equal(Number(count.n), 0);
  });

  it('refuses GET and DELETE (stateless: no session stream) and reports a body that is not JSON as a JSON-RPC parse error', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${server.url}/mcp`, { method, headers: { authorization: `Bearer ${writeKey}`, accept: 'text/event-stream' } });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.equal((await res.json()).detail.error, 'method_not_allowed');
    }
    const bad = await rawMcp(server.url, '{not json', { authorization: `Bearer ${writeKey}` });
    assert.equal(bad.status, 400);
    assert.equal(bad.message.error.code, -32700);
  });

  it('keeps concurrent requests apart, even with the same JSON-RPC id', async () => {
    const calls = Array.from({ length: 24 }, (_, i) =>
      rawMcp(
        server.url,
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_emergency', arguments: { orgId: org.orgId, externalId: `concurrent-${i}` } } },
        { authorization: `Bearer ${writeKey}`, ...(i % 2 ? { accept: 'text/event-stream, application/json' } : {}) },
      ),
    );
    const responses = await Promise.all(calls);
    responses.forEach((res, i) => {
      assert.equal(res.status, 200);
      assert.equal(res.message.result.isError, undefined);
      assert.equal(res.message.result.structuredContent.externalId, `concurrent-${i}`);
    });
  });

  it('records the request id of a tool call in its audit entry', async () => {
    const mcp = await connectMcp(server.url, writeKey, { headers: { 'x-request-id': 'agent-run-42' } });
    try {
      const created = await mcp.ok('create_emergency', { orgId: org.orgId });
      const audit = await mcp.ok('list_audit_logs', { orgId: org.orgId, eventCategory: 'emergency', eventType: 'emergency.declared' });
      const entry = audit.items.find((e: { resource: { id: string } }) => e.resource.id === created.emergencyId);
      assert.equal(entry.requestId, 'agent-run-42');
    } finally {
      await mcp.close();
    }
  });

  it('rejects a client that does not accept both JSON and SSE, as the transport requires', async () => {
    const res = await rawMcp(server.url, initializeRequest('2024-11-05'), { authorization: `Bearer ${writeKey}`, accept: 'text/html' });
    assert.equal(res.status, 406);
  });

  it('answers a JSON call in the same shape over both transports: 200, application/json, the JSON-RPC response', async () => {
    const call = { jsonrpc: '2.0', id: 'call-7', method: 'tools/call', params: { name: 'list_categories', arguments: { orgId: org.orgId } } };
    const auth = { authorization: `Bearer ${writeKey}` };
    // Answered directly (JSON preferred) and through the SDK transport (a batch of one).
    const direct = await rawMcp(server.url, call, auth);
    const batched = await rawMcp(server.url, [call], auth);
    for (const res of [direct, batched]) {
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/json');
    }
    assert.equal(direct.message.id, 'call-7');
    assert.equal(direct.message.jsonrpc, '2.0');
    assert.deepEqual(direct.message, batched.message);
    assert.ok(direct.message.result.structuredContent.items.some((c: { name: string }) => c.name === 'Fire'));
  });

  it('leaves everything but a plain JSON call to the SDK transport: unsupported versions, notifications, invalid messages', async () => {
    const auth = { authorization: `Bearer ${writeKey}` };
    const call = { jsonrpc: '2.0', id: 3, method: 'tools/list' };
    const badVersion = await rawMcp(server.url, call, { ...auth, 'mcp-protocol-version': '1999-01-01' });
    assert.equal(badVersion.status, 400);
    assert.match(badVersion.message.error.message, /Unsupported protocol version/);
    const notification = await rawMcp(server.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, auth);
    assert.equal(notification.status, 202);
    const invalid = await rawMcp(server.url, { jsonrpc: '2.0', id: 4 }, auth);
    assert.equal(invalid.status, 400);
    assert.equal(invalid.message.error.code, -32700);
    const unknownMethod = await rawMcp(server.url, { jsonrpc: '2.0', id: 5, method: 'no/such/method' }, auth);
    assert.equal(unknownMethod.status, 200);
    assert.equal(unknownMethod.message.error.code, -32601);
  });
});
