/**
 * The console's HTTP client: the public API (/api/public/v1) and the admin API (/api/admin/v1) of the
 * service that serves it, with the signed-in key in the Authorization header. A 401 anywhere ends the
 * session (see onUnauthorized); every other failure is an ApiError the page shows.
 */
import { clearSession, currentKey } from './session';
import type { Page } from './types';

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

function requestId(): string {
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

export interface RequestOptions {
  query?: Record<string, string | number | undefined | null>;
  body?: unknown;
  /** The key to send instead of the session's (sign-in checks a key before keeping it). */
  key?: string;
  /** Leave a 401 to the caller instead of ending the session. */
  keepSessionOn401?: boolean;
  signal?: AbortSignal;
}

export function buildUrl(base: string, path: string, query?: RequestOptions['query']): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return `${base}${path}${qs ? `?${qs}` : ''}`;
}

/** One request; resolves with the parsed JSON body of a 2xx answer. */
export async function request<T>(method: string, base: string, path: string, options: RequestOptions = {}): Promise<T> {
  const key = options.key ?? currentKey();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  const init: RequestInit = { method, headers, signal: options.signal };
  if (method !== 'GET') {
    // Every write carries an Idempotency-Key: a retry after a lost answer never acts twice.
    headers['idempotency-key'] = requestId();
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(options.body);
    }
  }
  let res: Response;
  try {
    res = await fetch(buildUrl(base, path, options.query), init);
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'The service could not be reached. Check the connection and try again.');
  }
  const text = await res.text().catch(() => '');
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  if (res.ok) return body as T;
  const { code, message } = describeError(res.status, body);
  if (res.status === 401 && !options.keepSessionOn401) keyRefused();
  throw new ApiError(res.status, code, message, body);
}

export const pub = {
  get: <T>(path: string, options?: RequestOptions) => request<T>('GET', PUBLIC, path, options),
  post: <T>(path: string, body?: unknown, options?: RequestOptions) => request<T>('POST', PUBLIC, path, { ...options, body }),
  patch: <T>(path: string, body?: unknown, options?: RequestOptions) => request<T>('PATCH', PUBLIC, path, { ...options, body }),
};

export const admin = {
  get: <T>(path: string, options?: RequestOptions) => request<T>('GET', ADMIN, path, options),
  post: <T>(path: string, body?: unknown, options?: RequestOptions) => request<T>('POST', ADMIN, path, { ...options, body }),
};

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

/** An authenticated download (attachments): the bytes as a blob: URL the page can show. */
export async function fetchBlobUrl(path: string, signal?: AbortSignal): Promise<string> {
  const key = currentKey();
  let res: Response;
  try {
    res = await fetch(`${PUBLIC}${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {}, signal });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'The service could not be reached.');
  }
  if (res.status === 401) keyRefused();
  if (!res.ok) throw new ApiError(res.status, `http_${res.status}`, `The attachment could not be loaded (HTTP ${res.status}).`);
  return URL.createObjectURL(await res.blob());
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
