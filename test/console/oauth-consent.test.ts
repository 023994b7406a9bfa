import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { discoverAuthorizationServerMetadata, exchangeAuthorization, startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.js';
import { mcpCall } from '../helpers/oauth.js';
import { createOrgTree, mintKey, startTestServer, type TestServer } from '../helpers/server.js';

/** The consent page in a real browser: a person signs in with an API key and approves, or denies. */
describe('the OAuth consent page in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let key: string;
  let callback: Server;
  let redirectUri: string;
  const arrivals: URL[] = [];

  before(async () => {
    server = await startTestServer({}, { dispatcher: false, deadlines: false });
    const org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['read'] })).key;
    // The agent platform's redirect URI: records where the browser lands.
    callback = createServer((req, res) => {
      // Only the redirect itself: the browser asks for /favicon.ico too.
      const url = new URL(req.url!, redirectUri);
      if (url.pathname === '/callback') arrivals.push(url);
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>Back at the agent</title><p>Done</p>');
    });
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
    redirectUri = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    callback?.close();
    await server?.close();
  });

  async function authorization() {
    const registered = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Browser agent', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }),
    });
    const client = (await registered.json()) as OAuthClientInformationFull;
    const metadata = await discoverAuthorizationServerMetadata(server.url);
    const resource = new URL(`${server.url}/mcp`);
    const started = await startAuthorization(server.url, {
      metadata,
      clientInformation: client,
      redirectUrl: redirectUri,
      scope: 'emergencies:read',
      state: 'browser-state',
      resource,
    });
    return { ...started, client, metadata, resource };
  }

  it('approve: a wrong key shows an error, the right one lands at the agent with a code that works', async () => {
    const { authorizationUrl, codeVerifier, client, metadata, resource } = await authorization();
    const page = await browser.newPage();
    try {
      await page.goto(authorizationUrl.href);
      assert.equal(await page.textContent('#client-name'), 'Browser agent');
      assert.match((await page.textContent('#scopes')) ?? '', /emergencies:read/);
      assert.equal(await page.textContent('#redirect-host'), new URL(redirectUri).host);

      await page.fill('#api_key', `enk_live_${'1'.repeat(72)}`);
      await page.click('button[value=approve]');
      await page.waitForSelector('[role=alert]');
      assert.match((await page.textContent('[role=alert]')) ?? '', /not a valid API key/);

      await page.fill('#api_key', key);
      await Promise.all([page.waitForURL((url) => url.pathname === '/callback'), page.click('button[value=approve]')]);
      const landed = arrivals.at(-1)!;
      assert.equal(landed.searchParams.get('state'), 'browser-state');
      const code = landed.searchParams.get('code')!;
      const tokens = await exchangeAuthorization(server.url, {
        metadata,
        clientInformation: client,
        authorizationCode: code,
        codeVerifier,
        redirectUri,
        resource,
      });
      assert.equal((await mcpCall(server.url, tokens.access_token)).status, 200);
    } finally {
      await page.close();
    }
  });

  it('deny: lands at the agent with access_denied and no code', async () => {
    const { authorizationUrl } = await authorization();
    const page = await browser.newPage();
    try {
      await page.goto(authorizationUrl.href);
      await Promise.all([page.waitForURL((url) => url.pathname === '/callback'), page.click('button[value=deny]')]);
      const landed = arrivals.at(-1)!;
      assert.equal(landed.searchParams.get('error'), 'access_denied');
      assert.equal(landed.searchParams.get('state'), 'browser-state');
      assert.equal(landed.searchParams.get('code'), null);
    } finally {
      await page.close();
    }
  });
});
