import assert from 'node:assert/strict';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/** An agent platform's side of the OAuth flow, kept in memory, as the MCP SDK's client asks of its host. */
export class MemoryOAuthClient implements OAuthClientProvider {
  information?: OAuthClientInformationMixed;
  stored?: OAuthTokens;
  verifier = '';
  /** Where the SDK sent the person: the consent page's URL. */
  authorizationUrl?: URL;

  constructor(
    readonly redirectUrl = 'http://127.0.0.1:9/callback',
    readonly clientMetadataUrl?: string,
    private readonly scope?: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test agent platform',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(this.scope ? { scope: this.scope } : {}),
    };
  }
  state() {
    return 'state-1234';
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: OAuthTokens) {
    this.stored = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

const decodeHtml = (text: string) =>
  text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** The consent page's hidden fields, as a browser would post them back. */
export function hiddenFields(html: string): Record<string, string> {
  return Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [decodeHtml(m[1]!), decodeHtml(m[2]!)]));
}

/** What a person does on the consent page: open it, sign in with a key, press a button; the answer is not followed. */
export async function answerConsent(authorizationUrl: URL | string, apiKey: string, decision: 'approve' | 'deny' = 'approve'): Promise<Response> {
  const page = await fetch(authorizationUrl);
  const html = await page.text();
  assert.equal(page.status, 200, html);
  const body = new URLSearchParams({ ...hiddenFields(html), api_key: apiKey, decision });
  return fetch(new URL('/oauth/authorize', authorizationUrl), {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    redirect: 'manual',
  });
}

/** The code of an approval's redirect, checked to carry the state. */
export function codeOf(answer: Response, state = 'state-1234'): string {
  assert.equal(answer.status, 302);
  const location = new URL(answer.headers.get('location')!);
  assert.equal(location.searchParams.get('state'), state);
  const code = location.searchParams.get('code');
  assert.ok(code, `no code in ${location.href}`);
  return code;
}

/** A JSON-RPC call on /mcp with a bearer credential; the status and the parsed body. */
export async function mcpCall(url: string, token: string, method = 'tools/list', params: Record<string, unknown> = {}) {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text.startsWith('{') ? JSON.parse(text) : text };
}
