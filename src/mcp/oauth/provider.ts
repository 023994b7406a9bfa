import { AccessDeniedError, InvalidRequestError, InvalidTargetError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthClientInformationFull, OAuthTokenRevocationRequest, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Response } from 'express';
import type { AppContext } from '../../context.js';
import type { ApiKeyPrincipal } from '../../domain/access/principal.js';
import type { OAuthClients } from '../../domain/oauth/clients.js';
import {
  approveGrant,
  codeChallengeOf,
  exchangeCode,
  exchangeRefreshToken,
  grantedScopes,
  requireKnownScopes,
  revokeToken,
  type TokenLifetimes,
} from '../../domain/oauth/grants.js';
import type { KeyAuthenticator } from '../../domain/keys/authenticator.js';
import { renderConsentPage } from './consent-page.js';
import { mcpResourceOf } from './origin.js';

/** Who signs in on the consent page: an API key, or why not (a wrong key, or too many wrong ones from this address). */
export type ConsentSignIn = (request: Response['req'], apiKey: string) => Promise<ApiKeyPrincipal | 'invalid' | 'throttled'>;

/** The authorization request's parameters that the consent form posts back unchanged. */
const FORM_FIELDS = ['response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'resource'];

/**
 * The tool server's authorization server behind the MCP SDK's OAuth handlers (which parse and check the requests, PKCE
 * included): consent with an API key, grants that live with that key, rotating refresh tokens (extensions §10).
 */
export class ToolServerAuthProvider implements OAuthServerProvider {
  constructor(
    private readonly ctx: AppContext,
    private readonly clients: OAuthClients,
    private readonly signIn: ConsentSignIn,
    /** The tool server's own credentials (API keys and access tokens), for verifyAccessToken. */
    private readonly credentials: KeyAuthenticator,
    private readonly lifetimes: TokenLifetimes,
  ) {}

  get clientsStore() {
    return {
      getClient: (clientId: string) => this.clients.get(clientId),
      registerClient: (client: Omit<OAuthClientInformationFull, 'client_id' | 'client_id_issued_at'>) => this.clients.register(client),
    };
  }

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response): Promise<void> {
    const req = res.req;
    // Exactly a registered URI: the handler would let a loopback one differ in its port (RFC 8252), §10 does not.
    if (!client.redirect_uris.includes(params.redirectUri)) {
      res.status(400).json(new InvalidRequestError("redirect_uri must be exactly one of the client's registered redirect URIs.").toResponseObject());
      return;
    }
    const resource = mcpResourceOf(this.ctx.config, req);
    if (params.resource === undefined) throw new InvalidTargetError(`resource is required: the tool server's URL, ${resource}.`);
    if (params.resource.href !== resource) throw new InvalidTargetError(`resource must be the tool server's URL, ${resource}.`);
    const scopes = params.scopes ?? [];
    requireKnownScopes(scopes);

    const source = (req.method === 'POST' ? req.body : req.query) as Record<string, unknown>;
    const fields = Object.fromEntries(FORM_FIELDS.filter((name) => typeof source[name] === 'string').map((name) => [name, source[name] as string]));
    const view = {
      clientName: client.client_name ?? client.client_id,
      clientId: client.client_id,
      redirectUri: params.redirectUri,
      scopes: scopes.length > 0 ? scopes : ["the API key's own permissions"],
      fields,
    };
    if (req.method !== 'POST') return renderConsentPage(res, 200, view);

    const decision = source.decision;
    if (decision === 'deny') throw new AccessDeniedError('The person declined the request.');
    if (decision !== 'approve') return renderConsentPage(res, 400, { ...view, error: 'Choose Approve or Deny.' });
    const apiKey = typeof source.api_key === 'string' ? source.api_key.trim() : '';
    const key = await this.signIn(req, apiKey);
    if (key === 'throttled') return renderConsentPage(res, 429, { ...view, error: 'Too many wrong keys from this address: wait a minute and try again.' });
    if (key === 'invalid') return renderConsentPage(res, 401, { ...view, error: 'That is not a valid API key (enk_live_…). Check it and try again.' });

    const code = await approveGrant(this.ctx, {
      client: { clientId: client.client_id, clientName: client.client_name ?? null },
      key,
      scopes: grantedScopes(scopes, key),
      redirectUri: params.redirectUri,
      codeChallenge: params.codeChallenge,
      resource,
    });
    const target = new URL(params.redirectUri);
    target.searchParams.set('code', code);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    res.redirect(302, target.href);
  }

  challengeForAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<string> {
    return codeChallengeOf(this.ctx, client.client_id, code);
  }

  exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string, _verifier?: string, redirectUri?: string, resource?: URL): Promise<OAuthTokens> {
    return exchangeCode(this.ctx, this.lifetimes, { clientId: client.client_id, code, redirectUri, resource: resource?.href });
  }

  exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string, scopes?: string[], resource?: URL): Promise<OAuthTokens> {
    return exchangeRefreshToken(this.ctx, this.lifetimes, { clientId: client.client_id, refreshToken, scopes, resource: resource?.href });
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const principal = await this.credentials.authenticate(token);
    if (principal?.kind !== 'api_key' || !principal.oauth) throw new InvalidTokenError('The access token is unknown, expired or revoked.');
    return { token, clientId: principal.oauth.clientId, scopes: [...principal.permissions], resource: new URL(principal.oauth.resource) };
  }

  revokeToken(client: OAuthClientInformationFull, request: OAuthTokenRevocationRequest): Promise<void> {
    return revokeToken(this.ctx, client.client_id, request.token);
  }
}
