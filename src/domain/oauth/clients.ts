import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { InvalidClientError, InvalidClientMetadataError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { type OAuthClientInformationFull, OAuthClientMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import { LRUCache } from 'lru-cache';
import { Agent, request } from 'undici';
import type { AppContext } from '../../context.js';
import { newId, nowIso } from '../shared/ids.js';
import { addressRefusal } from '../outbound/public-host.js';
import { checkWebhookUrl } from '../outbound/webhook-url.js';

/** Bounds of a registration: generous for real clients, small enough that one cannot store much. */
const MAX_REDIRECT_URIS = 10;
const MAX_METADATA_BYTES = 8 * 1024;
/** Client ID Metadata Documents: fetched at most this big, this fast, and kept this long (answers and failures). */
const DOCUMENT_MAX_BYTES = 16 * 1024;
const DOCUMENT_TIMEOUT_MS = 5_000;
const DOCUMENT_TTL_MS = 5 * 60_000;
const FAILURE_TTL_MS = 30_000;
const DOCUMENTS_CACHED = 1_000;

/** A client id that names its own metadata document (draft-ietf-oauth-client-id-metadata-document): an URL with a path. */
export const isMetadataDocumentId = (clientId: string): boolean => /^https?:\/\/[^/]+\/./.test(clientId);

/** What is checked of any client, registered or described by a document: public, code flow only, redirect URIs that are URLs. */
function checkClientMetadata(metadata: OAuthClientInformationFull): void {
  const method = metadata.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') throw new InvalidClientMetadataError(`token_endpoint_auth_method must be "none": clients are public and prove themselves with PKCE.`);
  if (metadata.redirect_uris.length === 0 || metadata.redirect_uris.length > MAX_REDIRECT_URIS) {
    throw new InvalidClientMetadataError(`redirect_uris must hold 1 to ${MAX_REDIRECT_URIS} URLs.`);
  }
  for (const uri of metadata.redirect_uris) {
    const url = new URL(uri);
    if (url.hash) throw new InvalidClientMetadataError('A redirect URI may not have a fragment.');
    if (url.protocol === 'javascript:' || url.protocol === 'data:') throw new InvalidClientMetadataError('A redirect URI must be an http(s) or app URL.');
  }
  const grants = metadata.grant_types ?? ['authorization_code'];
  if (grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token')) {
    throw new InvalidClientMetadataError('grant_types may hold authorization_code and refresh_token only.');
  }
  const responses = metadata.response_types ?? ['code'];
  if (responses.some((r) => r !== 'code')) throw new InvalidClientMetadataError('response_types may hold code only.');
}

/** Resolves a name to public addresses only (the webhook egress rule), unless private targets are allowed. */
function publicLookup(allowPrivateTargets: boolean) {
  return (hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    dnsLookup(hostname, { all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err);
      const refused = allowPrivateTargets ? undefined : addresses.map((a) => addressRefusal(a.address)).find((r) => r !== null);
      if (refused || addresses.length === 0) return callback(Object.assign(new Error(refused ?? 'no address'), { code: 'ENONPUBLIC' }));
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/**
 * The authorization server's clients: those registered with Dynamic Client Registration (stored), and those whose client id
 * is the URL of their metadata document (fetched under the webhook egress rules, and cached).
 */
export class OAuthClients {
  private readonly documents = new LRUCache<string, { client?: OAuthClientInformationFull; failure?: string }>({
    max: DOCUMENTS_CACHED,
    ttl: DOCUMENT_TTL_MS,
  });
  private readonly agent: Agent;

  constructor(
    private readonly ctx: AppContext,
    private readonly allowPrivateTargets = ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
  ) {
    this.agent = new Agent({ connect: { lookup: publicLookup(allowPrivateTargets) as never, timeout: DOCUMENT_TIMEOUT_MS }, connections: 4 });
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  async get(clientId: string): Promise<OAuthClientInformationFull | undefined> {
    if (isMetadataDocumentId(clientId)) return this.document(clientId);
    if (clientId.length > 64) return undefined;
    const row = await this.ctx.db.db.selectFrom('oauth_clients').select('metadata').where('client_id', '=', clientId).executeTakeFirst();
    return row ? (JSON.parse(row.metadata) as OAuthClientInformationFull) : undefined;
  }

  /** RFC 7591, for public clients: the id is generated, no secret is issued. */
  async register(metadata: Omit<OAuthClientInformationFull, 'client_id' | 'client_id_issued_at'>): Promise<OAuthClientInformationFull> {
    const client: OAuthClientInformationFull = {
      ...metadata,
      client_id: newId(),
      client_id_issued_at: Math.floor(Date.now() / 1000),
      token_endpoint_auth_method: 'none',
      client_secret: undefined,
      client_secret_expires_at: undefined,
      grant_types: metadata.grant_types ?? ['authorization_code', 'refresh_token'],
      response_types: metadata.response_types ?? ['code'],
    };
    checkClientMetadata(client);
    const text = JSON.stringify(client);
    if (Buffer.byteLength(text) > MAX_METADATA_BYTES) throw new InvalidClientMetadataError(`The client metadata is larger than ${MAX_METADATA_BYTES} bytes.`);
    await this.ctx.db.db
      .insertInto('oauth_clients')
      .values({ client_id: client.client_id, client_name: client.client_name?.slice(0, 200) ?? null, metadata: text, created_at: nowIso() })
      .execute();
    return client;
  }

  private async document(url: string): Promise<OAuthClientInformationFull> {
    const cached = this.documents.get(url);
    if (cached?.client) return cached.client;
    if (cached?.failure) throw new InvalidClientError(cached.failure);
    try {
      const client = await this.fetchDocument(url);
      this.documents.set(url, { client });
      return client;
    } catch (err) {
      const failure = `The client metadata document at ${url.slice(0, 200)} is unusable: ${(err as Error).message}`.slice(0, 500);
      this.documents.set(url, { failure }, { ttl: FAILURE_TTL_MS });
      throw new InvalidClientError(failure);
    }
  }

  private async fetchDocument(url: string): Promise<OAuthClientInformationFull> {
    const checked = checkWebhookUrl(url, this.allowPrivateTargets);
    if (!checked.ok) throw new Error(checked.reason);
    const response = await request(checked.url, {
      dispatcher: this.agent,
      headers: { accept: 'application/json' },
      headersTimeout: DOCUMENT_TIMEOUT_MS,
      bodyTimeout: DOCUMENT_TIMEOUT_MS,
      signal: AbortSignal.timeout(DOCUMENT_TIMEOUT_MS),
    });
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`it answered HTTP ${response.statusCode}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += chunk.length;
      if (size > DOCUMENT_MAX_BYTES) {
        response.body.destroy();
        throw new Error(`it is larger than ${DOCUMENT_MAX_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new Error('it is not JSON');
    }
    const parsed = OAuthClientMetadataSchema.safeParse(body);
    if (!parsed.success) throw new Error(`it is no client metadata (${parsed.error.issues[0]?.message ?? 'invalid'})`);
    if ((body as { client_id?: unknown }).client_id !== url) throw new Error('its client_id is not its own URL');
    const client: OAuthClientInformationFull = { ...parsed.data, client_id: url };
    try {
      checkClientMetadata(client);
    } catch (err) {
      throw new Error((err as Error).message);
    }
    return client;
  }
}
