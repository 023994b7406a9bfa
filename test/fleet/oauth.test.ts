import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { discoverAuthorizationServerMetadata, exchangeAuthorization, refreshAuthorization, startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import { loadConfig } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { createContext } from '../../src/create-context.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { revokeApiKey } from '../../src/domain/keys/service.js';
import { type ChildServer, spawnServer } from '../helpers/child-server.js';
import { freshDatabaseUrl, onPostgres } from '../helpers/db.js';
import { answerConsent, codeOf, mcpCall } from '../helpers/oauth.js';
import { createOrgTree, mintKey, TEST_ENV } from '../helpers/server.js';

const PUBLIC = 'https://alerts.example.com';
const REDIRECT = 'http://127.0.0.1:9/callback';

/** Behind a load balancer every step of the OAuth flow may reach another instance: grants and tokens live in the database. */
describe('OAuth sign-in across two api instances on one PostgreSQL database', {
  skip: onPostgres ? false : 'a fleet shares one PostgreSQL database: set DATABASE_URL=postgres://...',
}, () => {
  const database = freshDatabaseUrl();
  const env = { DATABASE_URL: database.url, HOST: '127.0.0.1', PUBLIC_BASE_URL: PUBLIC, RATE_LIMIT_PER_KEY: '100000' };
  let a: ChildServer;
  let b: ChildServer;
  let ctx: AppContext;
  let key: { id: string; key: string };

  before(async () => {
    a = await spawnServer(env, ['--role', 'api']);
    b = await spawnServer(env, ['--role', 'api']);
    ctx = createContext(loadConfig({ ...TEST_ENV, DATABASE_URL: database.url }));
    const org = await createOrgTree(ctx);
    key = await mintKey(ctx, { subjectType: 'org', subjectId: org.orgId });
  });
  after(async () => {
    for (const server of [a, b]) await server?.kill();
    await ctx?.db.close();
    await database.drop();
  });

  it('registers and approves on one, exchanges, refreshes and calls tools on the other, and the key ends it on both', async () => {
    const metadata = await discoverAuthorizationServerMetadata(a.url);
    assert.equal(metadata!.issuer, PUBLIC);
    const registered = await fetch(`${a.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Fleet agent', redirect_uris: [REDIRECT] }),
    });
    const client = (await registered.json()) as OAuthClientInformationFull;
    const resource = new URL(`${PUBLIC}/mcp`);
    const { authorizationUrl, codeVerifier } = await startAuthorization(a.url, {
      metadata,
      clientInformation: client,
      redirectUrl: REDIRECT,
      state: 'state-1234',
      resource,
    });
    // The consent page is asked of instance a (the public origin is the load balancer's, which the test plays).
    const onA = new URL(authorizationUrl.pathname + authorizationUrl.search, a.url);
    const code = codeOf(await answerConsent(onA, key.key));
    // The load balancer's public endpoints, as reached on one instance.
    const on = (server: ChildServer) => ({ ...metadata!, token_endpoint: `${server.url}/oauth/token` });
    const tokens = await exchangeAuthorization(b.url, {
      metadata: on(b),
      clientInformation: client,
      authorizationCode: code,
      codeVerifier,
      redirectUri: REDIRECT,
      resource,
    });
    assert.equal((await mcpCall(b.url, tokens.access_token)).status, 200);
    const refreshed = await refreshAuthorization(a.url, { metadata: on(a), clientInformation: client, refreshToken: tokens.refresh_token!, resource });
    for (const server of [a, b]) assert.equal((await mcpCall(server.url, refreshed.access_token)).status, 200, server.url);

    await revokeApiKey(ctx, operatorCaller(), key.id);
    await sleep(2_100);
    for (const server of [a, b]) assert.equal((await mcpCall(server.url, refreshed.access_token)).status, 401, server.url);
  });
});
