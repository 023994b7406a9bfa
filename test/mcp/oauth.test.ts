import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  auth,
  discoverAuthorizationServerMetadata,
  exchangeAuthorization,
  startAuthorization,
  UnauthorizedError,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { revokeApiKey } from '../../src/domain/keys/service.js';
import { connectMcp } from '../helpers/mcp.js';
import { answerConsent, codeOf, MemoryOAuthClient, mcpCall } from '../helpers/oauth.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** An agent platform adds the tool server by its URL alone (extensions §10), driving the MCP SDK's own OAuth client. */
describe('OAuth sign-in to the tool server, from a bare /mcp URL', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: { id: string; key: string };
  before(async () => {
    server = await startTestServer({}, { dispatcher: false, deadlines: false });
    org = await createOrgTree(server.ctx);
    key = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, name: 'Dispatch desk' });
  });
  after(() => server.close());

  it('answers 401 pointing at its protected resource metadata, which names the authorization server', async () => {
    const res = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 401);
    const metadataUrl = `${server.url}/.well-known/oauth-protected-resource/mcp`;
    assert.equal(res.headers.get('www-authenticate'), `Bearer resource_metadata="${metadataUrl}"`);
    const resource = await (await fetch(metadataUrl)).json();
    assert.equal(resource.resource, `${server.url}/mcp`);
    assert.deepEqual(resource.authorization_servers, [server.url]);
    assert.deepEqual(resource.bearer_methods_supported, ['header']);
    assert.ok(resource.scopes_supported.includes('emergencies:write'));
    const metadata = await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json();
    assert.equal(metadata.issuer, server.url);
    assert.deepEqual(metadata.code_challenge_methods_supported, ['S256']);
    assert.equal(metadata.client_id_metadata_document_supported, true);
    for (const endpoint of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint']) {
      assert.ok(metadata[endpoint].startsWith(`${server.url}/oauth/`), endpoint);
    }
    const wrong = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer enk_oat_0000', 'content-type': 'application/json' },
      body: '{}',
    });
    assert.match(wrong.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  });

  it('registers, gets consent with an API key, exchanges the code with PKCE, calls tools, refreshes, and dies with the key', async () => {
    const platform = new MemoryOAuthClient();
    const serverUrl = new URL(`${server.url}/mcp`);
    const first = new StreamableHTTPClientTransport(serverUrl, { authProvider: platform });
    await assert.rejects(new Client({ name: 'agent', version: '1' }).connect(first), UnauthorizedError);
    assert.ok(platform.information?.client_id, 'registered by DCR');
    const consentUrl = platform.authorizationUrl!;
    assert.equal(consentUrl.origin + consentUrl.pathname, `${server.url}/oauth/authorize`);
    assert.equal(consentUrl.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(consentUrl.searchParams.get('resource'), serverUrl.href);

    const page = await fetch(consentUrl);
    const html = await page.text();
    assert.match(html, /Test agent platform/);
    assert.match(html, /127\.0\.0\.1:9/);
    assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);

    await first.finishAuth(codeOf(await answerConsent(consentUrl, key.key)));
    const tokens = platform.stored!;
    assert.match(tokens.access_token, /^enk_oat_/);
    assert.ok(tokens.expires_in! <= 3600);
    assert.equal(
      tokens.scope?.split(' ').sort().join(' '),
      'audit:read categories:read emergencies:read emergencies:write events:read messages:write users:read',
    );

    const agent = new Client({ name: 'agent', version: '1' });
    await agent.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: platform }));
    const tools = (await agent.listTools()).tools.map((t) => t.name);
    assert.ok(tools.includes('create_emergency'), tools.join());
    const declared = await agent.callTool({
      name: 'create_emergency',
      arguments: { orgId: org.orgId, categoryId: org.categories.Fire, description: 'Smoke in the east wing' },
    });
    assert.ok(!declared.isError, JSON.stringify(declared.content));
    await agent.close();

    // REST keeps API keys: the access token is no key there.
    const rest = await fetch(`${server.base}/orgs/${org.orgId}/emergencies`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(rest.status, 401);
    // The audit log names the client and the key its grant was approved with.
    const audit = await (
      await fetch(`${server.base}/orgs/${org.orgId}/audit-logs?eventCategory=emergency`, { headers: { authorization: `Bearer ${key.key}` } })
    ).json();
    const entry = audit.items.find((e: any) => e.eventType === 'emergency.declared');
    assert.equal(entry.actor.type, 'oauth_client');
    assert.equal(entry.actor.clientId, platform.information!.client_id);
    assert.equal(entry.actor.keyId, key.id);

    // Refresh: a new pair, and the old refresh token is spent.
    assert.equal(await auth(platform, { serverUrl }), 'AUTHORIZED');
    const refreshed = platform.stored!;
    assert.notEqual(refreshed.access_token, tokens.access_token);
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
    assert.equal((await mcpCall(server.url, refreshed.access_token)).status, 200);

    await revokeApiKey(server.ctx, operatorCaller(), key.id);
    await sleep(2_100);
    const refused = await mcpCall(server.url, refreshed.access_token);
    assert.equal(refused.status, 401);
    const refresh = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshed.refresh_token!, client_id: platform.information!.client_id }),
    });
    assert.equal(refresh.status, 400);
    assert.equal((await refresh.json()).error, 'invalid_grant');
  });

  it('takes a client whose id is the URL of its metadata document', async () => {
    const { key: docKey } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['emergencies:read'] });
    let fetched = 0;
    const documents: Server = createServer((_req, res) => {
      fetched++;
      const url = `http://127.0.0.1:${(documents.address() as AddressInfo).port}/agent/client.json`;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ client_id: url, client_name: 'Document agent', redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none' }));
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    try {
      const clientId = `http://127.0.0.1:${(documents.address() as AddressInfo).port}/agent/client.json`;
      const metadata = await discoverAuthorizationServerMetadata(server.url);
      const resource = new URL(`${server.url}/mcp`);
      const clientInformation = { client_id: clientId };
      const { authorizationUrl, codeVerifier } = await startAuthorization(server.url, {
        metadata,
        clientInformation,
        redirectUrl: 'http://127.0.0.1:9/cb',
        scope: 'emergencies:read',
        state: 'doc-state',
        resource,
      });
      const page = await (await fetch(authorizationUrl)).text();
      assert.match(page, /Document agent/);
      const code = codeOf(await answerConsent(authorizationUrl, docKey), 'doc-state');
      const tokens = await exchangeAuthorization(server.url, {
        metadata,
        clientInformation,
        authorizationCode: code,
        codeVerifier,
        redirectUri: 'http://127.0.0.1:9/cb',
        resource,
      });
      assert.equal(tokens.scope, 'emergencies:read');
      const mcp = await connectMcp(server.url, tokens.access_token);
      const names = (await mcp.client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('list_emergencies'));
      assert.ok(!names.includes('create_emergency'), 'only what the scope allows');
      await mcp.close();
      assert.ok(fetched >= 1 && fetched <= 2, `fetched ${fetched} times: the document is cached`);
    } finally {
      documents.close();
    }
  });

  it('with OAUTH_ENABLED=false, /mcp takes API keys only and there is no authorization server', async () => {
    const keysOnly = await startTestServer({ OAUTH_ENABLED: 'false' }, { dispatcher: false, deadlines: false });
    try {
      const res = await fetch(`${keysOnly.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer');
      for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server', '/oauth/token']) {
        assert.equal((await fetch(`${keysOnly.url}${path}`, { method: path === '/oauth/token' ? 'POST' : 'GET' })).status, 404, path);
      }
    } finally {
      await keysOnly.close();
    }
  });
});
