import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { mcpCall } from '../helpers/oauth.js';
import { createOrgTree, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

const PUBLIC = 'https://alerts.example.com';

/** An enterprise's own identity provider (OAUTH_ISSUER): the tool server takes its JWTs, mapped to an org by a claim. */
describe('JWT access tokens of an external issuer', () => {
  let server: TestServer;
  let issuer: Server;
  let issuerUrl: string;
  let org: OrgFixture;
  let other: OrgFixture;
  let sign: (claims: JWTPayload, options?: { issuer?: string; audience?: string; expiresIn?: string; stranger?: boolean }) => Promise<string>;

  before(async () => {
    const keys = await generateKeyPair('ES256');
    const stranger = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    issuer = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => issuer.listen(0, '127.0.0.1', resolve));
    issuerUrl = `http://127.0.0.1:${(issuer.address() as AddressInfo).port}`;
    sign = (claims, options = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuer(options.issuer ?? issuerUrl)
        .setAudience(options.audience ?? `${PUBLIC}/mcp`)
        .setSubject('alice@example.com')
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '5m')
        .sign(options.stranger ? stranger.privateKey : keys.privateKey);
    server = await startTestServer(
      { PUBLIC_BASE_URL: PUBLIC, OAUTH_ISSUER: issuerUrl, OAUTH_JWKS_URL: `${issuerUrl}/jwks`, MCP_ALLOWED_ORIGINS: '' },
      { dispatcher: false, deadlines: false },
    );
    org = await createOrgTree(server.ctx);
    other = await createOrgTree(server.ctx);
  });
  after(async () => {
    await server?.close();
    issuer?.close();
  });

  it('names the issuer in the protected resource metadata beside this server', async () => {
    const metadata = await (await fetch(`${server.url}/.well-known/oauth-protected-resource/mcp`)).json();
    assert.equal(metadata.resource, `${PUBLIC}/mcp`);
    assert.deepEqual(metadata.authorization_servers, [PUBLIC, issuerUrl]);
  });

  it('a valid token acts in the org of its claim with the permissions of its scopes', async () => {
    const token = await sign({ emergency_api_org_id: org.orgId, scope: 'emergencies:read openid', azp: 'enterprise-agent' });
    const tools = await mcpCall(server.url, token);
    assert.equal(tools.status, 200);
    const names = tools.body.result.tools.map((t: { name: string }) => t.name).sort();
    assert.deepEqual(names, ['get_emergency', 'list_emergencies']);
    const mine = await mcpCall(server.url, token, 'tools/call', { name: 'list_emergencies', arguments: { orgId: org.orgId } });
    assert.equal(mine.body.result.isError, undefined, JSON.stringify(mine.body));
    const theirs = await mcpCall(server.url, token, 'tools/call', { name: 'list_emergencies', arguments: { orgId: other.orgId } });
    assert.equal(theirs.body.result.isError, true);
  });

  it('refuses a token of another issuer, for another audience, expired, signed by another key, or without the org claim', async () => {
    const refused = [
      await sign({ emergency_api_org_id: org.orgId, scope: 'read' }, { issuer: 'https://idp.example.net' }),
      await sign({ emergency_api_org_id: org.orgId, scope: 'read' }, { audience: 'https://other.example.com/mcp' }),
      await sign({ emergency_api_org_id: org.orgId, scope: 'read' }, { expiresIn: '-5m' }),
      await sign({ emergency_api_org_id: org.orgId, scope: 'read' }, { stranger: true }),
      await sign({ scope: 'read' }),
      await sign({ emergency_api_org_id: 'not-an-org-id', scope: 'read' }),
    ];
    for (const token of refused) {
      const res = await mcpCall(server.url, token);
      assert.equal(res.status, 401);
      assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    }
    // REST keeps API keys.
    const good = await sign({ emergency_api_org_id: org.orgId, scope: 'read' });
    assert.equal((await fetch(`${server.base}/orgs/${org.orgId}/emergencies`, { headers: { authorization: `Bearer ${good}` } })).status, 401);
  });
});
