import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { initializeRequest, rawMcp } from '../helpers/mcp.js';
import { createOrgTree, mintKey, startTestServer } from '../helpers/server.js';

const LATEST = '2025-11-25';

/** A server, a key of one of its orgs, and `initialize` sent with the given Origin (none when undefined). */
async function serverWithKey(env: Record<string, string> = {}) {
  const server = await startTestServer(env, { dispatcher: false, deadlines: false });
  const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: (await createOrgTree(server.ctx)).orgId });
  const initialize = (origin?: string) =>
    rawMcp(server.url, initializeRequest(LATEST), { authorization: `Bearer ${key}`, ...(origin === undefined ? {} : { origin }) });
  return { server, initialize, port: new URL(server.url).port };
}

describe('the tool server refuses pages of other sites (DNS rebinding)', () => {
  let local: Awaited<ReturnType<typeof serverWithKey>>;
  before(async () => {
    local = await serverWithKey({ MCP_ALLOWED_ORIGINS: 'https://agent.example.com' });
  });
  after(() => local.server.close());

  it('answers 403 with a JSON-RPC error to a foreign Origin, whatever key it holds', async () => {
    for (const origin of ['http://evil.example.com', `http://evil.example.com:${local.port}`, 'null', 'not an origin']) {
      const res = await local.initialize(origin);
      assert.equal(res.status, 403, origin);
      assert.equal(res.message.jsonrpc, '2.0');
      assert.equal(res.message.id, null);
      assert.match(res.message.error.message, /Origin/);
    }
    const unauthenticated = await rawMcp(local.server.url, initializeRequest(LATEST), { origin: 'http://evil.example.com' });
    assert.equal(unauthenticated.status, 403);
  });

  it('serves requests without an Origin, from its own loopback origin and from MCP_ALLOWED_ORIGINS', async () => {
    for (const origin of [
      undefined,
      `http://localhost:${local.port}`,
      `http://127.0.0.1:${local.port}`,
      'https://agent.example.com',
      'HTTPS://Agent.Example.com:443',
    ]) {
      const res = await local.initialize(origin);
      assert.equal(res.status, 200, String(origin));
      assert.equal(res.message.result.protocolVersion, LATEST);
    }
  });

  it('with PUBLIC_BASE_URL, its own origin is that one and no longer the loopback names', async () => {
    const hosted = await serverWithKey({ PUBLIC_BASE_URL: 'https://alerts.example.com/' });
    try {
      assert.equal((await hosted.initialize('https://alerts.example.com')).status, 200);
      assert.equal((await hosted.initialize(`http://127.0.0.1:${hosted.port}`)).status, 403);
    } finally {
      await hosted.server.close();
    }
  });
});
