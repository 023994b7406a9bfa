import { timingSafeEqual } from 'node:crypto';
import { InvalidGrantError, InvalidScopeError, InvalidTargetError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { AppContext } from '../../context.js';
import { inTransaction, type Tx } from '../../db/connect.js';
import type { ApiKeyTable } from '../../db/types.js';
import { GRANTS, type Grant, type Permission, permissionsOf } from '../access/permissions.js';
import type { ApiKeyPrincipal } from '../access/principal.js';
import { apiKeyPrincipal, apiKeyUsable } from '../keys/service.js';
import { CachedKeyVerifier, type CredentialVerifier, type KeyKind } from '../keys/verifier.js';
import { ExternalIssuerTokens } from './external-issuer.js';
import { newId, nowIso } from '../shared/ids.js';
import { sha256 } from '../shared/secrets.js';
import { mintToken, TOKEN_PATTERNS, type TokenKind, tokenPrefix } from './tokens.js';

/** A code is exchanged at once by its client; a minute covers a slow network. */
const CODE_SECONDS = 60;

export interface TokenLifetimes {
  accessSeconds: number;
  refreshSeconds: number;
}

/**
 * The scopes a grant gets: those asked (none asked: the key's own grants) that the key holds, as permission names. Asking for
 * something that is no scope, or only for what the key lacks, is `invalid_scope`.
 */
export function grantedScopes(asked: readonly string[], key: ApiKeyPrincipal): Permission[] {
  requireKnownScopes(asked);
  const wanted = permissionsOf(asked.length > 0 ? asked : key.grants);
  const granted = [...wanted].filter((p) => key.permissions.has(p));
  if (granted.length === 0) throw new InvalidScopeError(`The API key holds none of the scopes asked (${[...wanted].join(' ')}).`);
  return granted;
}

/** `invalid_scope` when a scope asked is none of the tool server's. */
export function requireKnownScopes(asked: readonly string[]): void {
  const unknown = asked.filter((scope) => !(GRANTS as readonly string[]).includes(scope));
  if (unknown.length > 0) throw new InvalidScopeError(`Unknown scope: ${unknown.slice(0, 3).join(' ').slice(0, 200)}. Scopes: ${GRANTS.join(' ')}.`);
}

/** What a person approved on the consent page: a grant to the client through their key, and its one-time code. */
export async function approveGrant(
  ctx: AppContext,
  input: {
    client: { clientId: string; clientName: string | null };
    key: ApiKeyPrincipal;
    scopes: Permission[];
    redirectUri: string;
    codeChallenge: string;
    resource: string;
  },
): Promise<string> {
  const now = Date.now();
  const code = mintToken('code');
  const grantId = newId();
  await inTransaction(ctx.db, async (tx) => {
    await tx.db
      .insertInto('oauth_grants')
      .values({
        id: grantId,
        client_id: input.client.clientId,
        client_name: input.client.clientName,
        api_key_id: input.key.keyId,
        scopes: input.scopes.join(' '),
        resource: input.resource,
        created_at: new Date(now).toISOString(),
        revoked_at: null,
        revoked_reason: null,
      })
      .execute();
    await insertToken(tx, code, {
      grantId,
      kind: 'code',
      scopes: input.scopes.join(' '),
      expiresAt: now + CODE_SECONDS * 1000,
      codeChallenge: input.codeChallenge,
      redirectUri: input.redirectUri,
    });
  });
  return code.plaintext;
}

async function insertToken(
  tx: Tx,
  token: { prefix: string; secretHash: string },
  row: { grantId: string; kind: TokenKind; scopes: string; expiresAt: number; codeChallenge?: string; redirectUri?: string },
) {
  await tx.db
    .insertInto('oauth_tokens')
    .values({
      token_prefix: token.prefix,
      secret_hash: token.secretHash,
      grant_id: row.grantId,
      kind: row.kind,
      scopes: row.scopes,
      expires_at: new Date(row.expiresAt).toISOString(),
      consumed_at: null,
      code_challenge: row.codeChallenge ?? null,
      redirect_uri: row.redirectUri ?? null,
      created_at: nowIso(),
    })
    .execute();
}

/** A token with its grant and the grant's key, when the text is a stored token of this kind (compared in constant time). */
async function findToken(db: AppContext['db']['db'], kind: TokenKind, text: string) {
  const prefix = tokenPrefix(kind, text);
  if (prefix === undefined) return undefined;
  const row = await db
    .selectFrom('oauth_tokens as t')
    .innerJoin('oauth_grants as g', 'g.id', 't.grant_id')
    .select([
      't.token_prefix',
      't.secret_hash',
      't.scopes',
      't.expires_at',
      't.consumed_at',
      't.code_challenge',
      't.redirect_uri',
      'g.id as grant_id',
      'g.client_id',
      'g.api_key_id',
      'g.resource',
      'g.revoked_at',
    ])
    .where('t.token_prefix', '=', prefix)
    .where('t.kind', '=', kind)
    .executeTakeFirst();
  if (!row || !timingSafeEqual(sha256(text), Buffer.from(row.secret_hash, 'hex'))) return undefined;
  return row;
}

type FoundToken = NonNullable<Awaited<ReturnType<typeof findToken>>>;

/** Ends a grant: every token issued through it stops working (a reused code or refresh token, a revocation). */
async function revokeGrant(ctx: AppContext, grantId: string, reason: string): Promise<void> {
  await ctx.db.db
    .updateTable('oauth_grants')
    .set({ revoked_at: nowIso(), revoked_reason: reason })
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** A token of `clientId` that is still valid, or `invalid_grant` (codes and refresh tokens are bound to their client). */
async function liveToken(ctx: AppContext, kind: 'code' | 'refresh', clientId: string, text: string): Promise<FoundToken> {
  const what = kind === 'code' ? 'authorization code' : 'refresh token';
  const token = await findToken(ctx.db.db, kind, text);
  if (!token || token.client_id !== clientId) throw new InvalidGrantError(`Unknown ${what}.`);
  if (token.revoked_at !== null) throw new InvalidGrantError(`The ${what}'s grant was revoked.`);
  if (Date.parse(token.expires_at) <= Date.now()) throw new InvalidGrantError(`The ${what} expired.`);
  return token;
}

/** The PKCE challenge an authorization code was issued with, for the token endpoint's check of the verifier. */
export async function codeChallengeOf(ctx: AppContext, clientId: string, code: string): Promise<string> {
  const token = await liveToken(ctx, 'code', clientId, code);
  return token.code_challenge ?? '';
}

async function keyOfGrant(tx: Tx, apiKeyId: string): Promise<ApiKeyTable> {
  const key = await tx.db.selectFrom('api_keys').selectAll().where('id', '=', apiKeyId).executeTakeFirst();
  if (!key || !apiKeyUsable(key, Date.now())) throw new InvalidGrantError('The API key the grant was approved with is revoked or expired.');
  return key;
}

function checkResource(token: FoundToken, resource: string | undefined): void {
  if (resource !== undefined && resource !== token.resource) {
    throw new InvalidTargetError(`The grant is for the resource ${token.resource}, not ${resource.slice(0, 200)}.`);
  }
}

async function issueTokens(tx: Tx, token: FoundToken, scopes: string, lifetimes: TokenLifetimes): Promise<OAuthTokens> {
  const now = Date.now();
  const access = mintToken('access');
  const refresh = mintToken('refresh');
  await insertToken(tx, access, { grantId: token.grant_id, kind: 'access', scopes, expiresAt: now + lifetimes.accessSeconds * 1000 });
  await insertToken(tx, refresh, { grantId: token.grant_id, kind: 'refresh', scopes, expiresAt: now + lifetimes.refreshSeconds * 1000 });
  return { access_token: access.plaintext, token_type: 'Bearer', expires_in: lifetimes.accessSeconds, refresh_token: refresh.plaintext, scope: scopes };
}

/** Marks a code or refresh token used; false when another request used it first. */
async function consume(tx: Tx, prefix: string): Promise<boolean> {
  const result = await tx.db
    .updateTable('oauth_tokens')
    .set({ consumed_at: nowIso() })
    .where('token_prefix', '=', prefix)
    .where('consumed_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * The token endpoint's `authorization_code` grant (PKCE checked before). A code works once: presented again, it revokes every
 * token issued with it (RFC 6749 §4.1.2). `redirect_uri` and `resource`, when sent, must be those of the authorization.
 */
export async function exchangeCode(
  ctx: AppContext,
  lifetimes: TokenLifetimes,
  input: { clientId: string; code: string; redirectUri?: string; resource?: string },
): Promise<OAuthTokens> {
  const token = await liveToken(ctx, 'code', input.clientId, input.code);
  if (input.redirectUri !== undefined && input.redirectUri !== token.redirect_uri) {
    throw new InvalidGrantError('redirect_uri differs from the one of the authorization request.');
  }
  checkResource(token, input.resource);
  const tokens = await inTransaction(ctx.db, async (tx) => {
    if (!(await consume(tx, token.token_prefix))) return null;
    await keyOfGrant(tx, token.api_key_id);
    return issueTokens(tx, token, token.scopes, lifetimes);
  });
  if (tokens) return tokens;
  await revokeGrant(ctx, token.grant_id, 'authorization code reused');
  throw new InvalidGrantError('The authorization code was already used; the tokens issued with it are revoked.');
}

/** The token endpoint's `refresh_token` grant: each refresh token works once, and a reused one revokes its whole family. */
export async function exchangeRefreshToken(
  ctx: AppContext,
  lifetimes: TokenLifetimes,
  input: { clientId: string; refreshToken: string; scopes?: string[]; resource?: string },
): Promise<OAuthTokens> {
  const token = await liveToken(ctx, 'refresh', input.clientId, input.refreshToken);
  checkResource(token, input.resource);
  const held = token.scopes.split(' ');
  const asked = input.scopes?.filter(Boolean);
  const beyond = asked?.filter((scope) => !held.includes(scope)) ?? [];
  if (beyond.length > 0) throw new InvalidScopeError(`The grant does not hold ${beyond.slice(0, 3).join(' ').slice(0, 200)}.`);
  const scopes = asked && asked.length > 0 ? asked.join(' ') : token.scopes;
  const tokens = await inTransaction(ctx.db, async (tx) => {
    if (token.consumed_at !== null || !(await consume(tx, token.token_prefix))) return null;
    await keyOfGrant(tx, token.api_key_id);
    return issueTokens(tx, token, scopes, lifetimes);
  });
  if (tokens) return tokens;
  await revokeGrant(ctx, token.grant_id, 'refresh token reused');
  throw new InvalidGrantError('The refresh token was already used; every token of its grant is revoked.');
}

/**
 * RFC 7009: a refresh token ends its grant (and so every access token of it), an access token only itself. Tokens of other
 * clients, and text that is no token, are ignored, as the RFC asks.
 */
export async function revokeToken(ctx: AppContext, clientId: string, text: string): Promise<void> {
  for (const kind of ['refresh', 'access'] as const) {
    const token = await findToken(ctx.db.db, kind, text);
    if (!token || token.client_id !== clientId) continue;
    if (kind === 'refresh') await revokeGrant(ctx, token.grant_id, 'revoked by the client');
    else await ctx.db.db.updateTable('oauth_tokens').set({ consumed_at: nowIso() }).where('token_prefix', '=', token.token_prefix).execute();
  }
}

interface AccessTokenRow extends ApiKeyTable {
  token_secret_hash: string;
  token_scopes: string;
  token_expires_at: string;
  token_revoked_at: string | null;
  grant_id: string;
  grant_revoked_at: string | null;
  grant_resource: string;
  client_id: string;
  client_name: string | null;
}

/**
 * Access tokens as bearer credentials of the tool server (see CachedKeyVerifier): the token, its grant and its key are read
 * together, so a revoked or expired key, or a revoked grant, ends the token as soon as the row is read again (within 2 s).
 */
export function accessTokenKind(ctx: AppContext): KeyKind<AccessTokenRow> {
  return {
    pattern: TOKEN_PATTERNS.access,
    lookup: (prefix) =>
      ctx.db.db
        .selectFrom('oauth_tokens as t')
        .innerJoin('oauth_grants as g', 'g.id', 't.grant_id')
        .innerJoin('api_keys as k', 'k.id', 'g.api_key_id')
        .selectAll('k')
        .select([
          't.secret_hash as token_secret_hash',
          't.scopes as token_scopes',
          't.expires_at as token_expires_at',
          't.consumed_at as token_revoked_at',
          'g.id as grant_id',
          'g.revoked_at as grant_revoked_at',
          'g.resource as grant_resource',
          'g.client_id',
          'g.client_name',
        ])
        .where('t.token_prefix', '=', prefix)
        .where('t.kind', '=', 'access')
        .executeTakeFirst(),
    secretHashOf: (row) => row.token_secret_hash,
    usable: (row, now) => row.token_revoked_at === null && row.grant_revoked_at === null && Date.parse(row.token_expires_at) > now && apiKeyUsable(row, now),
    principalOf: (row) =>
      apiKeyPrincipal(row, {
        grants: row.token_scopes.split(' ') as Grant[],
        oauth: { clientId: row.client_id, clientName: row.client_name, grantId: row.grant_id, resource: row.grant_resource },
      }),
    markUsed: (row, at) => ctx.db.db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', row.id).execute(),
  };
}

/** The tool server's credentials besides API keys: this server's access tokens, and those of an external issuer when set. */
export function toolServerCredentials(ctx: AppContext): CredentialVerifier[] {
  const { config } = ctx;
  const verifiers: CredentialVerifier[] = [];
  if (config.OAUTH_ENABLED) verifiers.push(new CachedKeyVerifier(accessTokenKind(ctx)));
  if (config.OAUTH_ISSUER && config.OAUTH_JWKS_URL && config.PUBLIC_BASE_URL) {
    verifiers.push(
      new ExternalIssuerTokens({
        issuer: config.OAUTH_ISSUER,
        jwksUrl: config.OAUTH_JWKS_URL,
        audience: `${config.PUBLIC_BASE_URL}/mcp`,
        orgClaim: config.OAUTH_ORG_CLAIM,
      }),
    );
  }
  return verifiers;
}

/** Codes and tokens past their expiry (and a day's margin), removed in pages by the retention sweep. */
export async function pruneExpiredTokens(ctx: AppContext, limit = 1000): Promise<number> {
  const before = new Date(Date.now() - 24 * 3600_000).toISOString();
  const expired = await ctx.db.db.selectFrom('oauth_tokens').select('token_prefix').where('expires_at', '<', before).limit(limit).execute();
  if (expired.length === 0) return 0;
  await ctx.db.db
    .deleteFrom('oauth_tokens')
    .where(
      'token_prefix',
      'in',
      expired.map((r) => r.token_prefix),
    )
    .execute();
  return expired.length;
}
