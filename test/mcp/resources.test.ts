import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { revokeApiKey } from '../../src/domain/keys/service.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** The SDK's real client, with what the server pushed on its session's stream. */
async function connect(baseUrl: string, key: string) {
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
  const mcp = new Client({ name: 'resource-tests', version: '1.0.0' });
  const updated: string[] = [];
  const logged: { level: string; data: unknown }[] = [];
  mcp.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
  mcp.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logged.push({ level: n.params.level, data: n.params.data }));
  await mcp.connect(transport);
  return { mcp, transport, updated, logged };
}

async function until(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('tool server resources, sessions and subscriptions', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  let api: ReturnType<typeof client>;
  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    api = client(server.base, key);
  });
  after(() => server.close());

  const declare = async (description: string) =>
    (await api.post(`/orgs/${org.orgId}/emergencies`, { description, categoryName: 'Fire' })).body.emergencyId as string;

  it('lists the open emergencies as resources, page by page, and reads each as its REST twin answers', async () => {
    const ids = [];
    for (let i = 0; i < 53; i++) ids.push(await declare(`listed ${i}`));
    assert.equal((await api.post(`/orgs/${org.orgId}/emergencies/${ids[0]}/resolutions`, {})).status, 201);
    const { mcp } = await connect(server.url, key);
    const templates = (await mcp.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
    assert.deepEqual(templates, ['emergency://{orgId}/{emergencyId}', 'emergency://{orgId}/{emergencyId}/timeline']);

    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await mcp.listResources(cursor ? { cursor } : {});
      for (const r of page.resources) {
        assert.ok(r.name && r.mimeType === 'application/json');
        listed.push(r.uri);
      }
      cursor = page.nextCursor;
    } while (cursor);
    const expected = ids.slice(1).map((id) => `emergency://${org.orgId}/${id}`);
    assert.deepEqual([...listed].sort(), [...expected].sort(), 'every open emergency once, the resolved one not');

    const uri = `emergency://${org.orgId}/${ids[1]}`;
    const read = await mcp.readResource({ uri });
    assert.deepEqual(JSON.parse((read.contents[0] as { text: string }).text), (await api.get(`/orgs/${org.orgId}/emergencies/${ids[1]}`)).body);
    const timeline = await mcp.readResource({ uri: `${uri}/timeline` });
    assert.deepEqual(
      JSON.parse((timeline.contents[0] as { text: string }).text).items.map((e: { event: { eventType: string } }) => e.event.eventType),
      ['emergency.declared'],
    );
    await assert.rejects(mcp.readResource({ uri: `emergency://${org.orgId}/00000000-0000-4000-8000-000000000000` }), /-32002|Resource not found/);
    const other = await createOrgTree(server.ctx);
    const otherId = (
      await client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: other.orgId })).key).post(`/orgs/${other.orgId}/emergencies`, {})
    ).body.emergencyId;
    await assert.rejects(
      mcp.readResource({ uri: `emergency://${other.orgId}/${otherId}` }),
      /Resource not found/,
      "another tenant's emergency looks like none",
    );
    await assert.rejects(mcp.readResource({ uri: 'test://static-text' }), /Resource not found/);
    await mcp.close();

    // The timeline takes events:read, the record emergencies:read.
    const reader = await connect(server.url, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['emergencies:read'] })).key);
    await reader.mcp.readResource({ uri });
    await assert.rejects(reader.mcp.readResource({ uri: `${uri}/timeline` }), /events:read/);
    await reader.mcp.close();
  });

  it('a subscription hears each committed event of its emergency on the session stream, in order, and stops on unsubscribe', async () => {
    const watched = await declare('watched');
    const bystander = await declare('bystander');
    const { mcp, transport, updated, logged } = await connect(server.url, key);
    assert.match(transport.sessionId ?? '', /^[0-9a-f-]{36}$/);
    const uri = `emergency://${org.orgId}/${watched}`;
    await mcp.setLoggingLevel('debug');
    await mcp.subscribeResource({ uri });
    await mcp.subscribeResource({ uri: `${uri}/timeline` });
    await until('the subscription notice', () => logged.some((l) => String(l.data).includes(uri)));

    await api.patch(`/orgs/${org.orgId}/emergencies/${bystander}`, { categoryName: 'Medical' });
    await api.patch(`/orgs/${org.orgId}/emergencies/${watched}`, { categoryName: 'Medical' });
    await api.post(`/orgs/${org.orgId}/emergencies/${watched}/resolutions`, {});
    await until('two updates of both URIs', () => updated.length >= 4);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(updated, [uri, `${uri}/timeline`, uri, `${uri}/timeline`]);

    await mcp.unsubscribeResource({ uri });
    await mcp.unsubscribeResource({ uri: `${uri}/timeline` });
    const quietSince = updated.length;
    await api.post(`/orgs/${org.orgId}/emergencies/${watched}/messages`, { content: 'after unsubscribing' });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(updated.length, quietSince);

    // A level above info silences the subscription notices.
    await mcp.setLoggingLevel('warning');
    const noticesBefore = logged.length;
    await mcp.subscribeResource({ uri });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(logged.length, noticesBefore);
    await transport.terminateSession();
    await mcp.close();
  });

  it('sessions: subscribing needs one, another key cannot use one, an ended one is 404 for what needs it, stateless calls keep working', async () => {
    const emergencyId = await declare('sessions');
    const uri = `emergency://${org.orgId}/${emergencyId}`;
    const post = (body: unknown, headers: Record<string, string> = {}, as = key) =>
      fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${as}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
          ...headers,
        },
        body: JSON.stringify(body),
      });
    const stateless = await (await post({ jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri } })).json();
    assert.match(stateless.error.message, /need a session/);
    const read = await (await post({ jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri } })).json();
    assert.equal(JSON.parse(read.result.contents[0].text).emergencyId, emergencyId, 'a request without a session reads');

    const { transport, mcp } = await connect(server.url, key);
    const sessionId = transport.sessionId!;
    const otherKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    const stolen = await post({ jsonrpc: '2.0', id: 3, method: 'resources/subscribe', params: { uri } }, { 'mcp-session-id': sessionId }, otherKey);
    assert.equal(stolen.status, 404);
    const stream = await fetch(`${server.url}/mcp`, {
      headers: { authorization: `Bearer ${otherKey}`, accept: 'text/event-stream', 'mcp-session-id': sessionId },
    });
    assert.equal(stream.status, 404);
    await transport.terminateSession();
    const ended = await post({ jsonrpc: '2.0', id: 4, method: 'resources/subscribe', params: { uri } }, { 'mcp-session-id': sessionId });
    assert.equal(ended.status, 404);
    const served = await post({ jsonrpc: '2.0', id: 5, method: 'tools/list' }, { 'mcp-session-id': sessionId });
    assert.equal(served.status, 200, 'a request that needs no session is served without it');
    assert.equal((await fetch(`${server.url}/mcp`, { headers: { authorization: `Bearer ${key}` } })).status, 405, 'GET without a session');
    await mcp.close();
  });

  it("a revoked key's session ends, and its stream with it", async () => {
    const { id, key: doomed } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const headers = { authorization: `Bearer ${doomed}`, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
    const init = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    const sessionId = init.headers.get('mcp-session-id')!;
    assert.ok(sessionId);
    const stream = await fetch(`${server.url}/mcp`, { headers: { ...headers, accept: 'text/event-stream', 'mcp-session-id': sessionId } });
    assert.equal(stream.status, 200);
    const reader = stream.body!.getReader();
    await revokeApiKey(server.ctx, operatorCaller(), id);
    const ended = await Promise.race([
      (async () => {
        for (;;) if ((await reader.read()).done) return true;
      })(),
      new Promise<false>((r) => setTimeout(() => r(false), 8_000)),
    ]);
    assert.equal(ended, true, 'the stream ended after the revocation');
  });

  it('completes org ids, open emergencies and category names; a reference it does not have completes to nothing', async () => {
    const emergencyId = await declare('completion');
    const { mcp } = await connect(server.url, key);
    const orgs = await mcp.complete({
      ref: { type: 'ref/resource', uri: 'emergency://{orgId}/{emergencyId}' },
      argument: { name: 'orgId', value: org.orgId.slice(0, 6) },
    });
    assert.deepEqual(orgs.completion.values, [org.orgId]);
    const emergencies = await mcp.complete({
      ref: { type: 'ref/resource', uri: 'emergency://{orgId}/{emergencyId}' },
      argument: { name: 'emergencyId', value: emergencyId.slice(0, 8) },
      context: { arguments: { orgId: org.orgId } },
    });
    assert.ok(emergencies.completion.values.includes(emergencyId));
    const categories = await mcp.complete({
      ref: { type: 'ref/prompt', name: 'declare_emergency' },
      argument: { name: 'categoryName', value: 'fi' },
      context: { arguments: { orgId: org.orgId } },
    });
    assert.deepEqual(categories.completion.values, ['Fire']);
    const none = await mcp.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'par' } });
    assert.deepEqual(none.completion.values, []);
    assert.deepEqual(
      (await mcp.listPrompts()).prompts.map((p) => p.name),
      ['declare_emergency'],
    );
    const prompt = await mcp.getPrompt({ name: 'declare_emergency', arguments: { orgId: org.orgId, categoryName: 'Fire' } });
    assert.match((prompt.messages[0]!.content as { text: string }).text, /create_emergency/);
    await mcp.close();
    const reader = await connect(server.url, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['read'] })).key);
    assert.deepEqual((await reader.mcp.listPrompts()).prompts, [], 'a key that cannot declare is not offered the prompt');
    await reader.mcp.close();
  });

  it('a subscription on one instance hears events committed by another on the same database', async () => {
    let second: RunningServer | undefined;
    try {
      second = await startServer(server.config);
      const emergencyId = await declare('across instances');
      const { mcp, updated } = await connect(server.url, key);
      const uri = `emergency://${org.orgId}/${emergencyId}`;
      await mcp.subscribeResource({ uri });
      const elsewhere = client(`${second.url}/api/public/v1`, key);
      assert.equal((await elsewhere.patch(`/orgs/${org.orgId}/emergencies/${emergencyId}`, { categoryName: 'Medical' })).status, 200);
      await until('the update from the other instance', () => updated.length === 1, 3_000);
      assert.deepEqual(updated, [uri]);
      await mcp.close();
    } finally {
      await second?.stop();
    }
  });
});
