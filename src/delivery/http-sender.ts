import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent, request } from 'undici';
import { hostOf, isPublicAddress } from '../domain/outbound/public-host.js';

/** What is kept of a response body: enough to diagnose, never enough to store someone's payload. */
export const RECORDED_BODY_BYTES = 1024;
/** Beyond this, the rest of a response body is not read (the connection is dropped instead of drained). */
const DRAIN_LIMIT_BYTES = 64 * 1024;
export const DEFAULT_REQUEST_TIMEOUT_MS = 15_000;

export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  /** First 1 KiB of the response body, as text. */
  body: string | null;
  /** Short, stable description of a failure without a response (never a stack trace). */
  error: string | null;
  durationMs: number;
  /** Retry-After of the response, in milliseconds from now, when present and valid. */
  retryAfterMs: number | null;
}

export class NonPublicAddressError extends Error {
  readonly code = 'EWEBHOOK_NON_PUBLIC';
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A DNS lookup for outgoing connections that refuses names resolving to non-public addresses. It
 * runs at connect time, so a name re-pointed at an internal address after registration (DNS
 * rebinding) is refused too. Every resolved address must be public, not just the first.
 */
function publicOnlyLookup(hostname: string, options: { all?: boolean; family?: number } | undefined, callback: LookupCallback): void {
  dnsLookup(hostname, { ...(options ?? {}), all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    if (addresses.length === 0 || addresses.some((a) => !isPublicAddress(a.address))) {
      return callback(new NonPublicAddressError(`${hostname} resolves to a non-public address`), []);
    }
    if (options?.all) return callback(null, addresses);
    return callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return null;
  if (/^\s*\d+\s*$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

function describeFailure(err: unknown, timedOut: boolean): string {
  if (timedOut) return 'timeout';
  const e = err as { code?: string; name?: string; cause?: { code?: string } };
  const code = e?.code ?? e?.cause?.code;
  if (err instanceof NonPublicAddressError || code === 'EWEBHOOK_NON_PUBLIC') return 'target resolves to a non-public address';
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `DNS lookup failed (${code})`;
  if (code) return `connection failed (${code})`;
  return 'request failed';
}

/**
 * Sends signed webhook bodies with undici: one keep-alive pool per origin, a hard deadline per
 * request, redirects never followed (a 3xx is a failed attempt), and at most 1 KiB of the answer kept.
 */
export class WebhookSender {
  private readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly allowPrivateTargets: boolean;

  constructor(options: { allowPrivateTargets: boolean; timeoutMs?: number; connectionsPerOrigin?: number }) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.allowPrivateTargets = options.allowPrivateTargets;
    this.agent = new Agent({
      connections: options.connectionsPerOrigin ?? 64,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      keepAliveTimeout: 30_000,
      connect: {
        timeout: this.timeoutMs,
        ...(this.allowPrivateTargets ? {} : { lookup: publicOnlyLookup as never }),
      },
    });
  }

  async send(url: string, headers: Record<string, string>, body: string, abort?: AbortSignal): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    if (!this.allowPrivateTargets) {
      // An IP literal never goes through the lookup above, so it is checked here.
      const { host, isIp } = hostOf(new URL(url));
      if (isIp && !isPublicAddress(host)) {
        return { ok: false, statusCode: null, body: null, error: 'target resolves to a non-public address', durationMs: elapsed(), retryAfterMs: null };
      }
    }
    // One controller and timer per request (cheaper than AbortSignal.timeout + AbortSignal.any on
    // the hot path): the deadline covers connect, headers and body together.
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs);
    const onInterrupt = () => controller.abort();
    abort?.addEventListener('abort', onInterrupt, { once: true });
    const signal = controller.signal;
    try {
      const res = await request(url, { method: 'POST', headers, body, dispatcher: this.agent, signal });
      const chunks: Buffer[] = [];
      let kept = 0;
      let read = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        read += chunk.length;
        if (kept < RECORDED_BODY_BYTES) {
          const part = chunk.subarray(0, RECORDED_BODY_BYTES - kept);
          chunks.push(part);
          kept += part.length;
        }
        if (read > DRAIN_LIMIT_BYTES) {
          res.body.destroy();
          break;
        }
      }
      const statusCode = res.statusCode;
      return {
        ok: statusCode >= 200 && statusCode < 300,
        statusCode,
        body: chunks.length ? Buffer.concat(chunks).toString('utf8') : null,
        error: null,
        durationMs: elapsed(),
        retryAfterMs: parseRetryAfter(res.headers['retry-after'], Date.now()),
      };
    } catch (err) {
      const interrupted = abort?.aborted === true && !timedOut;
      return {
        ok: false,
        statusCode: null,
        body: null,
        error: interrupted ? 'interrupted: worker stopping' : describeFailure(err, timedOut),
        durationMs: elapsed(),
        retryAfterMs: null,
      };
    } finally {
      clearTimeout(timer);
      abort?.removeEventListener('abort', onInterrupt);
    }
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }
}
