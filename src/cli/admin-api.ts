import { randomUUID } from 'node:crypto';
import { CommandFailure } from './failure.js';

/** The admin API's path on a server; EMERGENCY_API_URL names the server itself. */
export const ADMIN_API_PATH = '/api/admin/v1';

/** Exit code when the server cannot be reached (sysexits' EX_UNAVAILABLE). */
export const EXIT_UNREACHABLE = 69;

/** A server whose admin API runs the admin commands, and the settings that named it (for messages). */
export interface AdminTarget {
  /** The server's base URL, without a trailing slash. */
  url: string;
  adminKey: string;
  /** `--url` or `EMERGENCY_API_URL`. */
  urlSetting: string;
  /** `--admin-key-file`, `EMERGENCY_API_ADMIN_KEY`, `EMERGENCY_API_ADMIN_KEY_FILE` (or the deprecated `--admin-key`). */
  keySetting: string;
  /** Plain http:// to another machine, allowed by --insecure: the operator is warned. */
  plainHttpElsewhere: boolean;
}

/**
 * One request of the admin API as data: what a command's remote half sends (its route, percent-encoded by `path`,
 * and its JSON body).
 */
export type AdminRequest = { get: string } | { post: string; body?: unknown } | { patch: string; body: unknown } | { delete: string };

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

interface FieldIssue {
  loc: (string | number)[];
  msg: string;
}

/** An error answer of the admin API: shown as `<status> <code>: <message>`, then one line per refused field. */
export class AdminApiError extends CommandFailure {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly apiMessage: string,
    readonly fields: FieldIssue[] = [],
  ) {
    const lines = fields.map((f) => `  ${f.loc.join('.')}: ${f.msg}`);
    super([`${status} ${code}: ${apiMessage}`, ...lines].join('\n'), 1, {
      status,
      code,
      ...(fields.length ? { fields: fields.map((f) => ({ loc: f.loc, msg: f.msg })) } : {}),
    });
  }

  /** The same error with a hint after its message. */
  withHint(hint: string): AdminApiError {
    return new AdminApiError(this.status, this.code, `${this.apiMessage.replace(/\.$/, '')}; ${hint}`, this.fields);
  }
}

/** `path\`/orgs/${id}/devices\``: each interpolated id percent-encoded, so an id cannot change the route. */
export function path(strings: TemplateStringsArray, ...ids: string[]): string {
  return strings.reduce((out, part, i) => out + part + (i < ids.length ? encodeURIComponent(ids[i]!) : ''), '');
}

const REQUEST_TIMEOUT_MS = 60_000;
const MAX_ATTEMPTS = 3;
const MAX_RETRY_WAIT_MS = 10_000;
/** Connection failures after which the request may have reached the server: retried under the same Idempotency-Key. */
const RETRIED_NETWORK_ERRORS = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The system error code of a failed fetch (ECONNREFUSED, ...), else its reason (e.g. "bad port"). */
function networkCode(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return 'timeout';
  return e?.cause?.code ?? e?.code ?? e?.cause?.message ?? e?.message ?? 'network error';
}

const NETWORK_EXPLAINED: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name could not be resolved',
  ECONNRESET: 'the connection was reset',
  timeout: `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`,
};

/**
 * The admin API over HTTP, with the admin key as bearer. Every write of one command run carries the same
 * Idempotency-Key (a new UUID per run), so the retries below, after a lost connection or a 503, cannot
 * write twice: the server answers a repeated request with its stored answer.
 */
export class AdminApi {
  readonly idempotencyKey = randomUUID();

  constructor(readonly target: AdminTarget) {}

  /** Sends one request of a command's remote half; resolves to the admin API's answer. */
  send(request: AdminRequest): Promise<unknown> {
    if ('get' in request) return this.request('GET', request.get);
    if ('post' in request) return this.request('POST', request.post, request.body);
    if ('patch' in request) return this.request('PATCH', request.patch, request.body);
    return this.request('DELETE', request.delete);
  }

  /** One page of a list. */
  page<T>(route: string, { cursor, limit }: { cursor?: string; limit: number }): Promise<Page<T>> {
    const params = new URLSearchParams({ limit: String(limit) });
    if (cursor !== undefined) params.set('cursor', cursor);
    return this.request<Page<T>>('GET', `${route}?${params}`);
  }

  private unreachable(detail: string): CommandFailure {
    const { url, urlSetting } = this.target;
    return new CommandFailure(
      `cannot reach the admin API at ${url}${ADMIN_API_PATH} (${urlSetting}): ${detail}.\n` +
        `Check that the server runs and that ${urlSetting} is its base URL, e.g. http://127.0.0.1:8080; ` +
        'or unset EMERGENCY_API_URL and EMERGENCY_API_ADMIN_KEY to work on the database of DATABASE_URL.',
      EXIT_UNREACHABLE,
    );
  }

  private async request<T>(method: string, route: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.target.adminKey}`,
      accept: 'application/json',
      'user-agent': 'emergency-api-cli',
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET') headers['idempotency-key'] = this.idempotencyKey;
    const url = `${this.target.url}${ADMIN_API_PATH}${route}`;
    for (let attempt = 1; ; attempt++) {
      let res: Response;
      try {
        res = await fetch(url, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          redirect: 'manual',
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
      } catch (err) {
        const code = networkCode(err);
        if (attempt < MAX_ATTEMPTS && RETRIED_NETWORK_ERRORS.has(code)) {
          await sleep(500 * attempt);
          continue;
        }
        throw this.unreachable(NETWORK_EXPLAINED[code] ?? code);
      }
      const text = await res.text();
      let answer: unknown;
      try {
        answer = text === '' ? null : JSON.parse(text);
      } catch {
        answer = undefined;
      }
      if (res.ok && answer !== undefined) return answer as T;
      const error = apiError(res.status, answer);
      // Unavailable, or the same key's first request still running: wait as the server asks, then the same request again.
      if (attempt < MAX_ATTEMPTS && (res.status === 503 || error?.code === 'idempotency_key_in_use')) {
        const seconds = Number(res.headers.get('retry-after'));
        await sleep(Math.min(MAX_RETRY_WAIT_MS, Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000));
        continue;
      }
      if (error) throw error.status === 401 ? error.withHint(`check ${this.target.keySetting}: an active admin key of this server (enk_adm_...)`) : error;
      // Not an answer of the admin API (a proxy, another service, a redirect): the URL is probably wrong.
      throw this.unreachable(`HTTP ${res.status} without an admin API answer`);
    }
  }
}

/** `{detail:{error,message}}` or the 422 list `{detail:[{loc,msg,type}]}`; null for anything else. */
function apiError(status: number, answer: unknown): AdminApiError | null {
  const detail = (answer as { detail?: unknown } | null | undefined)?.detail;
  if (Array.isArray(detail)) {
    const fields = detail.map((d: { loc?: unknown; msg?: unknown }) => ({
      loc: Array.isArray(d?.loc) ? (d.loc as (string | number)[]) : [],
      msg: typeof d?.msg === 'string' ? d.msg : 'invalid',
    }));
    return new AdminApiError(status, 'validation_error', 'the request was refused', fields);
  }
  if (detail && typeof detail === 'object') {
    const { error, message } = detail as { error?: unknown; message?: unknown };
    if (typeof error === 'string') return new AdminApiError(status, error, typeof message === 'string' ? message : '');
  }
  return null;
}

/**
 * The secret (key, token, signing secret) of a creating or rotating answer. A request retried under the same
 * Idempotency-Key is answered from the stored answer, which never holds a secret: then the secret is lost, and
 * the message says how to get another.
 */
export function secretOf(secret: string | undefined, what: string, recovery: string): string {
  if (secret) return secret;
  throw new CommandFailure(`the ${what} was written, but the answer carrying its secret was lost on the way; ${recovery}`, 1);
}
