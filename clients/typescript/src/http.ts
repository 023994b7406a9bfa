import createFetchClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { paths as AdminPaths } from './admin-schema.js';
import { type components, type paths, responseParsing } from './schema.js';

/** Where each API lives below the service's origin (the `servers` entry of its OpenAPI document). */
export const PUBLIC_API_PATH = '/api/public/v1';
export const ADMIN_API_PATH = '/api/admin/v1';

export type PublicClient = Client<paths>;
export type AdminClient = Client<AdminPaths>;

/** Options shared by both clients; everything but `baseUrl` and `headers` is passed to openapi-fetch as is. */
export interface CommonClientOptions extends Omit<ClientOptions, 'baseUrl' | 'headers'> {
  /**
   * The service's origin, e.g. `https://emergency.example.com` (a base that already ends with the API's
   * path, e.g. `…/api/public/v1`, is used as it is).
   */
  baseUrl: string;
  /** Headers sent with every request (Authorization is set from the key). */
  headers?: Record<string, string>;
}

export interface PublicClientOptions extends CommonClientOptions {
  /** An API key, `enk_live_…`, of an org, enterprise or partner. */
  apiKey: string;
}

export interface AdminClientOptions extends CommonClientOptions {
  /** An admin key, `enk_adm_…`. */
  adminKey: string;
}

function apiBase(baseUrl: string, apiPath: string): string {
  const trimmed = baseUrl.replace(/\/+$/, '');
  return trimmed.endsWith(apiPath) ? trimmed : `${trimmed}${apiPath}`;
}

function requireKey(key: string, what: string): string {
  if (typeof key !== 'string' || key.trim() === '') throw new TypeError(`${what} is required`);
  return key;
}

/**
 * A typed client of the public API (`/api/public/v1`): every path, parameter, body and answer is
 * typed from the service's OpenAPI document. Calls resolve to `{ data, error, response }`: `data` on a
 * 2xx, otherwise `error` typed as that route's documented error bodies.
 *
 *   const api = createClient({ baseUrl: 'https://emergency.example.com', apiKey: process.env.EMERGENCY_API_KEY! });
 *   const { data, error } = await api.POST('/orgs/{org_id}/emergencies', { params: { path: { org_id } }, body: { categoryName: 'Fire' } });
 */
export function createClient(options: PublicClientOptions): PublicClient {
  const { baseUrl, apiKey, headers, ...rest } = options;
  const client = createFetchClient<paths>({
    ...rest,
    baseUrl: apiBase(baseUrl, PUBLIC_API_PATH),
    headers: { ...headers, Authorization: `Bearer ${requireKey(apiKey, 'apiKey')}` },
  });
  return { ...client, GET: readingAsServed(client.GET) };
}

/**
 * openapi-fetch parses every answer as JSON unless told otherwise: a GET whose answer is not JSON (attachment bytes, CAP
 * XML, the event stream) is read as its document declares it (a Blob, text, the body's stream), unless the call names
 * its own `parseAs`.
 */
function readingAsServed(get: PublicClient['GET']): PublicClient['GET'] {
  const parsing: Record<string, string> = responseParsing;
  return ((url: string, init?: { parseAs?: string }) => {
    const parseAs = parsing[url];
    return get(url as never, (parseAs && init?.parseAs === undefined ? { ...init, parseAs } : init) as never);
  }) as PublicClient['GET'];
}

/** A typed client of the admin API (`/api/admin/v1`), authenticated with an admin key. */
export function createAdminClient(options: AdminClientOptions): AdminClient {
  const { baseUrl, adminKey, headers, ...rest } = options;
  return createFetchClient<AdminPaths>({
    ...rest,
    baseUrl: apiBase(baseUrl, ADMIN_API_PATH),
    headers: { ...headers, Authorization: `Bearer ${requireKey(adminKey, 'adminKey')}` },
  });
}

export type ErrorResponse = components['schemas']['ErrorResponse'];
export type HTTPValidationError = components['schemas']['HTTPValidationError'];

/** True for a 422 validation failure (`detail` is the list of problems), false for any other error body. */
export function isValidationError(error: unknown): error is HTTPValidationError {
  return typeof error === 'object' && error !== null && Array.isArray((error as { detail?: unknown }).detail);
}

/** True for an error body with `detail.error` (any answer but a 422 validation failure). */
export function isErrorResponse(error: unknown): error is ErrorResponse {
  const detail = typeof error === 'object' && error !== null ? (error as { detail?: unknown }).detail : undefined;
  return typeof detail === 'object' && detail !== null && typeof (detail as { error?: unknown }).error === 'string';
}

/** The stable error code of an error body (`detail.error`), `validation_error` for a 422 list, or undefined. */
export function errorCode(error: unknown): string | undefined {
  if (isValidationError(error)) return 'validation_error';
  return isErrorResponse(error) ? error.detail.error : undefined;
}
