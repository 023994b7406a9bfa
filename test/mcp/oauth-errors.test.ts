import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { discoverAuthorizationServerMetadata, exchangeAuthorization, startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import fc from 'fast-check';
import { answerConsent, codeOf, hiddenFields, mcpCall } from '../helpers/oauth.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

const REDIRECT = 'http://127.0.0.1:9/callback';

/** Each refusal of extensions §10 is the RFC's error, never a 5xx; and nothing thrown at the endpoints gives one. */
describe('the authorization server refuses what it must', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  let client: OAuthClientInformationFull;
  let metadata: Awaited<ReturnType<typeof discoverAuthorizationServerMetadata>>;
  let resource: URL;

  before(async () => {
    server = await startTestServer({ OAUTH_REQUESTS_PER_ADDRESS: '10000' }, { dispatcher: false, deadlines: false });
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['emergencies:read', 'events:read'] })).key;
    const registered = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Negative agent', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
    });
    assert.equal(registered.status, 201);
    client = await registered.json();
    metadata = await discoverAuthorizationServerMetadata(server.url);
    resource = new URL(`${server.url}/mcp`);
  });
  after(() => server.close());

  /** An authorization request as the SDK's client builds it, with parameters changed or removed (undefined). */
  async function authorizeUrl(changes: Record<string, string | undefined> = {}, scope = 'emergencies:read') {
    const started = await startAuthorization(server.url, { metadata, clientInformation: client, redirectUrl: REDIRECT, scope, state: 'state-1234', resource });
    for (const [name, value] of Object.entries(changes)) {
      if (value === undefined) started.authorizationUrl.searchParams.delete(name);
      else started.authorizationUrl.searchParams.set(name, value);
    }
    return started;
  }
  const token = (params: Record<string, string>) =>
    fetch(`${server.url}/oauth/token`, { method: 'POST', body: new URLSearchParams({ client_id: client.client_id, ...params }) });
  async function grant(scope = 'emergencies:read') {
    const { authorizationUrl, codeVerifier } = await authorizeUrl({}, scope);
    const code = codeOf(await answerConsent(authorizationUrl, key));
    return { code, codeVerifier };
  }
  /** A grant approved with the key, its code exchanged as the SDK's client does. */
  async function issued(scope?: string) {
    const { code, codeVerifier } = await grant(scope);
    return exchangeAuthorization(server.url, { metadata, clientInformation: client, authorizationCode: code, codeVerifier, redirectUri: REDIRECT, resource });
  }
  const redirectError = (res: Response) => {
    assert.equal(res.status, 302);
    const location = new URL(res.headers.get('location')!);
    assert.equal(location.origin + location.pathname, REDIRECT);
    return location.searchParams;
  };

  it('a wrong code_verifier: invalid_grant', async () => {
    const { code } = await grant();
    const res = await token({ grant_type: 'authorization_code', code, code_verifier: 'x'.repeat(64), redirect_uri: REDIRECT });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error, 'invalid_grant');
  });

  it('a code used twice: invalid_grant, and the tokens of its first use stop working', async () => {
    const { code, codeVerifier } = await grant();
    const first = await exchangeAuthorization(server.url, {
      metadata,
      clientInformation: client,
      authorizationCode: code,
      codeVerifier,
      redirectUri: REDIRECT,
      resource,
    });
    const again = await token({ grant_type: 'authorization_code', code, code_verifier: codeVerifier, redirect_uri: REDIRECT });
    assert.equal(again.status, 400);
    assert.equal((await again.json()).error, 'invalid_grant');
    const refresh = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token! });
    assert.equal((await refresh.json()).error, 'invalid_grant');
    await sleep(2_100);
    assert.equal((await mcpCall(server.url, first.access_token)).status, 401);
  });

  it('a redirect_uri not registered exactly: 400 without a redirect; at the token endpoint: invalid_grant', async () => {
    for (const other of ['http://127.0.0.1:10/callback', 'http://127.0.0.1:9/callback/', 'https://evil.example.com/callback']) {
      const { authorizationUrl } = await authorizeUrl({ redirect_uri: other });
      const res = await fetch(authorizationUrl, { redirect: 'manual' });
      assert.equal(res.status, 400, other);
      assert.equal(res.headers.get('location'), null);
      assert.equal((await res.json()).error, 'invalid_request');
    }
    const { code, codeVerifier } = await grant();
    const res = await token({ grant_type: 'authorization_code', code, code_verifier: codeVerifier, redirect_uri: 'http://127.0.0.1:9/other' });
    assert.equal((await res.json()).error, 'invalid_grant');
  });

  it('a resource other than the tool server, or none: invalid_target; a token used at another resource: 401', async () => {
    for (const changes of [{ resource: 'https://other.example.com/mcp' }, { resource: undefined }]) {
      const { authorizationUrl } = await authorizeUrl(changes);
      const params = redirectError(await fetch(authorizationUrl, { redirect: 'manual' }));
      assert.equal(params.get('error'), 'invalid_target');
      assert.equal(params.get('state'), 'state-1234');
    }
    const { code, codeVerifier } = await grant();
    const wrongTarget = await token({
      grant_type: 'authorization_code',
      code,
      code_verifier: codeVerifier,
      redirect_uri: REDIRECT,
      resource: 'https://other.example.com/mcp',
    });
    assert.equal((await wrongTarget.json()).error, 'invalid_target');
    // The same server under another name is another resource: a token issued for 127.0.0.1 is refused at localhost.
    const tokens = await issued();
    assert.equal((await mcpCall(server.url, tokens.access_token)).status, 200);
    const elsewhere = await mcpCall(server.url.replace('127.0.0.1', 'localhost'), tokens.access_token);
    assert.equal(elsewhere.status, 401);
  });

  it('a reused refresh token revokes its whole family', async () => {
    const first = await issued();
    const second = await (await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token! })).json();
    assert.match(second.refresh_token, /^enk_ort_/);
    const reused = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token! });
    assert.equal(reused.status, 400);
    assert.equal((await reused.json()).error, 'invalid_grant');
    const family = await token({ grant_type: 'refresh_token', refresh_token: second.refresh_token });
    assert.equal((await family.json()).error, 'invalid_grant');
  });

  it('scopes beyond the key: only what the key holds, or invalid_scope when it holds none of them', async () => {
    const { authorizationUrl } = await authorizeUrl({}, 'audit:read');
    const params = redirectError(await answerConsent(authorizationUrl, key));
    assert.equal(params.get('error'), 'invalid_scope');
    const tokens = await issued('emergencies:read audit:read emergencies:write');
    assert.equal(tokens.scope, 'emergencies:read');
    const unknown = await authorizeUrl({}, 'emergencies:read admin');
    assert.equal(redirectError(await fetch(unknown.authorizationUrl, { redirect: 'manual' })).get('error'), 'invalid_scope');
    // Narrowing on refresh is allowed; widening is not.
    const wider = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, scope: 'emergencies:read events:read' });
    assert.equal((await wider.json()).error, 'invalid_scope');
  });

  it('deny on the consent page: access_denied with the state; a wrong key: the page again, no redirect', async () => {
    const { authorizationUrl } = await authorizeUrl();
    const denied = redirectError(await answerConsent(authorizationUrl, '', 'deny'));
    assert.equal(denied.get('error'), 'access_denied');
    assert.equal(denied.get('state'), 'state-1234');
    const wrong = await answerConsent(authorizationUrl, `enk_live_${'0'.repeat(72)}`);
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get('location'), null);
    const html = await wrong.text();
    assert.match(html, /not a valid API key/);
    assert.equal(hiddenFields(html).client_id, client.client_id);
  });

  it('a bad request to the endpoints is answered in OAuth terms', async () => {
    const unknownClient = await fetch(`${server.url}/oauth/authorize?client_id=nobody&redirect_uri=${encodeURIComponent(REDIRECT)}&response_type=code`);
    assert.equal(unknownClient.status, 400);
    assert.equal((await unknownClient.json()).error, 'invalid_client');
    const plain = (await authorizeUrl({ code_challenge_method: 'plain' })).authorizationUrl;
    assert.equal(redirectError(await fetch(plain, { redirect: 'manual' })).get('error'), 'invalid_request');
    const implicit = (await authorizeUrl({ response_type: 'token' })).authorizationUrl;
    assert.equal(redirectError(await fetch(implicit, { redirect: 'manual' })).get('error'), 'invalid_request');
    const password = await token({ grant_type: 'password', username: 'a', password: 'b' });
    assert.equal((await password.json()).error, 'unsupported_grant_type');
    const badJson = await fetch(`${server.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"redirect_uris":' });
    assert.equal(badJson.status, 400);
    const noRedirects = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [] }),
    });
    assert.equal((await noRedirects.json()).error, 'invalid_client_metadata');
    const revoked = await fetch(`${server.url}/oauth/revoke`, { method: 'POST', body: new URLSearchParams({ client_id: client.client_id, token: 'nothing' }) });
    assert.equal(revoked.status, 200);
  });

  it('a tool call beyond the scopes of its token: 403 insufficient_scope naming the scope, so the client may ask for it', async () => {
    const tokens = await issued();
    const call = await mcpCall(server.url, tokens.access_token, 'tools/call', { name: 'create_emergency', arguments: { orgId: org.orgId } });
    assert.equal(call.status, 403);
    assert.equal(
      call.headers.get('www-authenticate'),
      `Bearer error="insufficient_scope", scope="emergencies:write", resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp"`,
    );
    const allowed = await mcpCall(server.url, tokens.access_token, 'tools/call', { name: 'list_emergencies', arguments: { orgId: org.orgId } });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.body.result.isError, undefined);
  });

  it('an Origin that is not allowed is 403 even with a valid access token', async () => {
    const tokens = await issued();
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, origin: 'http://evil.example.com', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(res.status, 403);
  });

  it('revoking an access token at /oauth/revoke ends it', async () => {
    const tokens = await issued();
    const res = await fetch(`${server.url}/oauth/revoke`, {
      method: 'POST',
      body: new URLSearchParams({ client_id: client.client_id, token: tokens.access_token, token_type_hint: 'access_token' }),
    });
    assert.equal(res.status, 200);
    await sleep(2_100);
    assert.equal((await mcpCall(server.url, tokens.access_token)).status, 401);
    // The refresh token of the grant still works: only the access token was revoked.
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
    assert.equal(refreshed.status, 200);
  });

  it('fuzzed requests to every OAuth endpoint: no 5xx', async () => {
    const endpoints = ['/oauth/authorize', '/oauth/token', '/oauth/register', '/oauth/revoke', '/.well-known/oauth-authorization-server'];
    const names = fc.constantFrom(
      'client_id',
      'redirect_uri',
      'response_type',
      'code_challenge',
      'code_challenge_method',
      'scope',
      'state',
      'resource',
      'grant_type',
      'code',
      'code_verifier',
      'refresh_token',
      'token',
      'api_key',
      'decision',
      'redirect_uris',
    );
    const values = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom(client.client_id, REDIRECT, 'code', 'S256', 'authorization_code', 'refresh_token', resource.href, 'approve', 'deny', key, '%00', '[]'),
      fc.webUrl(),
    );
    const requests = fc.record({
      endpoint: fc.constantFrom(...endpoints),
      method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'),
      type: fc.constantFrom('application/x-www-form-urlencoded', 'application/json', 'text/plain', 'multipart/form-data'),
      params: fc.array(fc.tuple(names, values), { maxLength: 8 }),
      raw: fc.option(fc.string({ maxLength: 200 })),
    });
    await fc.assert(
      fc.asyncProperty(requests, async (r) => {
        const query = new URLSearchParams(r.params);
        const body = r.raw ?? (r.type === 'application/json' ? JSON.stringify(Object.fromEntries(r.params)) : query.toString());
        const res = await fetch(`${server.url}${r.endpoint}${r.method === 'GET' ? `?${query}` : ''}`, {
          method: r.method,
          headers: { 'content-type': r.type },
          body: r.method === 'GET' ? undefined : body,
          redirect: 'manual',
        });
        await res.arrayBuffer();
        assert.ok(res.status < 500, `${r.method} ${r.endpoint} ${body.slice(0, 200)}: ${res.status}`);
      }),
      { numRuns: Number(process.env.FUZZ_OAUTH_REQUESTS ?? 400) },
    );
  });
});
