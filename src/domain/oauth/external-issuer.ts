import { createRemoteJWKSet, jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';
import { GRANTS, type Grant, permissionsOf } from '../access/permissions.js';
import type { Principal } from '../access/principal.js';
import type { CredentialVerifier } from '../keys/verifier.js';
import { isUuid, normalizeOrgId } from '../shared/ids.js';
import { sha256 } from '../shared/secrets.js';

const JWT_SHAPE = /^[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}$/;
/** Verdicts are kept as briefly as a key's: a token past its expiry works at most this much longer. */
const VERDICT_TTL_MS = 2_000;
const VERDICTS_KEPT = 10_000;
/** Asymmetric algorithms only: a shared-secret one would let anyone holding the JWKS sign. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

export interface ExternalIssuerOptions {
  issuer: string;
  jwksUrl: string;
  /** The tool server's URL: the audience every token must name. */
  audience: string;
  /** The claim holding the org id the token acts in. */
  orgClaim: string;
}

/**
 * JWT access tokens of an enterprise's own identity provider (OAUTH_ISSUER, extensions §10): signed by a key of its JWKS,
 * issued by it, for the tool server's URL, unexpired. The org claim makes the caller an org's, with the token's scopes
 * (`scope`, or `scp` as an array) as its permissions. Such a token is not tied to an API key: it ends at its expiry.
 */
export class ExternalIssuerTokens implements CredentialVerifier {
  private readonly jwks: ReturnType<typeof createRemoteJWKSet>;
  private readonly verdicts = new LRUCache<string, { principal: Principal | null }>({ max: VERDICTS_KEPT, ttl: VERDICT_TTL_MS });

  constructor(private readonly options: ExternalIssuerOptions) {
    this.jwks = createRemoteJWKSet(new URL(options.jwksUrl), { timeoutDuration: 5_000, cooldownDuration: 30_000, cacheMaxAge: 600_000 });
  }

  matches(text: string): boolean {
    return JWT_SHAPE.test(text);
  }

  idOf(text: string): string | undefined {
    return this.matches(text) ? sha256(text).toString('hex').slice(0, 8) : undefined;
  }

  knowsKeyIdOf(text: string): boolean {
    return this.verdicts.has(text);
  }

  authenticateCached(text: string): Principal | null | undefined {
    return this.verdicts.get(text)?.principal;
  }

  async authenticate(text: string): Promise<Principal | null> {
    const cached = this.verdicts.get(text);
    return cached ? cached.principal : this.authenticateFresh(text);
  }

  async authenticateFresh(text: string): Promise<Principal | null> {
    const principal = await this.verify(text);
    this.verdicts.set(text, { principal });
    return principal;
  }

  private async verify(text: string): Promise<Principal | null> {
    let payload: Awaited<ReturnType<typeof jwtVerify>>['payload'];
    try {
      ({ payload } = await jwtVerify(text, this.jwks, {
        issuer: this.options.issuer,
        audience: this.options.audience,
        algorithms: ALGORITHMS,
        requiredClaims: ['exp', 'sub'],
        clockTolerance: 30,
      }));
    } catch {
      return null;
    }
    const org = payload[this.options.orgClaim];
    if (typeof org !== 'string' || !isUuid(org)) return null;
    const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : Array.isArray(payload.scp) ? payload.scp : [];
    const grants = scopes.filter((s): s is Grant => typeof s === 'string' && (GRANTS as readonly string[]).includes(s));
    const subject = String(payload.sub).slice(0, 200);
    const clientId = [payload.azp, payload.client_id, payload.cid].find((v): v is string => typeof v === 'string') ?? this.options.issuer;
    return {
      kind: 'api_key',
      keyId: `jwt:${subject}`,
      keyName: subject,
      subjectType: 'org',
      subjectId: normalizeOrgId(org),
      allowedOrgIds: null,
      grants,
      permissions: permissionsOf(grants),
      oauth: {
        clientId: clientId.slice(0, 200),
        clientName: null,
        grantId: typeof payload.jti === 'string' ? payload.jti.slice(0, 200) : '',
        resource: this.options.audience,
      },
    };
  }
}
