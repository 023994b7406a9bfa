/**
 * The console's HTTP access: the typed clients (clients/typescript) of the public API (/api/public/v1)
 * and the admin API (/api/admin/v1) of the service that serves it, with the signed-in key in the
 * Authorization header. A 401 anywhere ends the session (see onUnauthorized); every other failure is an
 * ApiError the page shows.
 */
import type { Middleware } from 'openapi-fetch';
import { type AdminClient, createAdminClient, createClient, type PublicClient } from '../../clients/typescript/src/http';
import { clearSession, currentKey } from './session';
import type { Me, Org, Page } from './types';

export const PUBLIC = '/api/public/v1';
export const ADMIN = '/api/admin/v1';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    /** The service's error code (`permission_denied`, `org_not_covered`, ...), `network` when no answer came. */
    readonly code: string,
    message: string,
    readonly body: unknown = null,
  ) {
    super(message);
  }
}

type Listener = (message: string) => void;
let unauthorizedListener: Listener = () => undefined;

/** Called once by the app: what to do when the service refuses the key (401). */
export function onUnauthorized(listener: Listener): void {
  unauthorizedListener = listener;
}

/** Ends the session because the key was refused, wherever that happened. */
export function keyRefused(message = 'The service refused your key (401). Sign in again.'): void {
  clearSession();
  unauthorizedListener(message);
}

/** A fresh Idempotency-Key (a UUID). */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/** Reads the service's error body ({detail:{error,message}} or the 422 list) into a sentence. */
function describeError(status: number, body: unknown): { code: string; message: string } {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (Array.isArray(detail)) {
    const parts = detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).slice(1).join('.') || 'body'}: ${d.msg ?? 'invalid'}`);
    return { code: 'validation', message: `The service did not accept the request: ${parts.join('; ')}` };
  }
  if (detail && typeof detail === 'object') {
    const d = detail as { error?: string; message?: string };
    return { code: d.error ?? `http_${status}`, message: d.message ?? `HTTP ${status}` };
  }
  return { code: `http_${status}`, message: `The service answered HTTP ${status}.` };
}

type Clients = { key: string; pub: PublicClient; admin: AdminClient };
let clients: Clients | null = null;

/** Every write carries an Idempotency-Key: a retry after a lost answer never acts twice. */
const idempotency: Middleware = {
  onRequest({ request }) {
    if (request.method !== 'GET' && !request.headers.has('idempotency-key')) request.headers.set('idempotency-key', newIdempotencyKey());
    return request;
  },
};

function clientsFor(key: string): Clients {
  if (clients?.key === key) return clients;
  const baseUrl = location.origin;
  const pubClient = createClient({ baseUrl, apiKey: key });
  const adminClient = createAdminClient({ baseUrl, adminKey: key });
  pubClient.use(idempotency);
  adminClient.use(idempotency);
  clients = { key, pub: pubClient, admin: adminClient };
  return clients;
}

/** The typed client of the public API (/api/public/v1) with the session's key (or `key`, at sign-in). */
export function pub(key?: string): PublicClient {
  return clientsFor(key ?? currentKey() ?? 'none').pub;
}

/** The typed client of the admin API (/api/admin/v1) with the session's (admin) key. */
export function admin(): AdminClient {
  return clientsFor(currentKey() ?? 'none').admin;
}

/**
 * The body of a 2xx answer of a typed call; otherwise an ApiError (a 401 also ends the session,
 * unless `keepSessionOn401`: sign-in checks a key before keeping it).
 */
export async function unwrap<D>(
  call: Promise<{ data?: D; error?: unknown; response: Response }>,
  options: { keepSessionOn401?: boolean } = {},
): Promise<NonNullable<D>> {
  let result: { data?: D; error?: unknown; response: Response };
  try {
    result = await call;
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'The service could not be reached. Check the connection and try again.');
  }
  const { response } = result;
  if (response.ok) return result.data as NonNullable<D>;
  const { code, message } = describeError(response.status, result.error ?? null);
  if (response.status === 401 && !options.keepSessionOn401) keyRefused();
  throw new ApiError(response.status, code, message, result.error ?? null);
}

export function buildUrl(base: string, path: string, query?: Record<string, string | number | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return `${base}${path}${qs ? `?${qs}` : ''}`;
}

/** Every page of a list, following nextCursor (bounded: a console shows at most `max` items). */
export async function allPages<T>(get: (cursor?: string) => Promise<Page<T>>, max = 1000): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await get(cursor);
    items.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && items.length < max);
  return items;
}

/** The signed-in key as the service sees it, with every organization it covers (up to `allPages`' bound). */
export interface WhoAmI {
  me: Me;
  orgs: Org[];
}

/**
 * GET /me: what the key may do (its permissions) and where (its organizations), read without writing
 * anything; past the first 200 organizations the rest come from GET /orgs, from where /me stopped.
 */
export async function whoAmI(key?: string, options: { keepSessionOn401?: boolean } = {}): Promise<WhoAmI> {
  const me = await unwrap(pub(key).GET('/me'), options);
  const after = me.orgsNextCursor;
  if (!after) return { me, orgs: me.orgs };
  const rest = await allPages<Org>(
    (cursor) => unwrap(pub(key).GET('/orgs', { params: { query: { cursor: cursor ?? after, limit: 200 } } }), options),
    1000 - me.orgs.length,
  );
  return { me, orgs: [...me.orgs, ...rest] };
}

/** An authenticated download (an attachment's stored bytes) as a blob: URL the page can show. */
export async function attachmentUrl(orgId: string, emergencyId: string, attachmentId: string, signal?: AbortSignal): Promise<string> {
  const blob = await unwrap(
    pub().GET('/orgs/{org_id}/emergencies/{emergency_id}/attachments/{attachment_id}/content', {
      params: { path: { org_id: orgId, emergency_id: emergencyId, attachment_id: attachmentId } },
      parseAs: 'blob',
      signal,
    }),
  );
  return URL.createObjectURL(blob as Blob);
}

/** What to tell the operator about a failure, by kind: not allowed (403), offline, or the service's message. */
export function explain(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 403) return `Not allowed: ${err.message}`;
    if (err.code === 'network') return err.message;
    if (err.status === 404) return `Not found: ${err.message}`;
    return err.message;
  }
  return (err as Error)?.message ?? String(err);
}
