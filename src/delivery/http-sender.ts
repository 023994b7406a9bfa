import { Agent, type Dispatcher, interceptors, request } from 'undici';
import { hostOf, isPublicAddress, nonPublicAddressReason } from '../domain/outbound/public-host.js';
import { MAX_ANSWER_TTL_MS, TargetResolver } from './target-resolver.js';

/** What is kept of a response body: enough to diagnose, never enough to store someone's payload. */
export const RECORDED_BODY_BYTES = 1024;
/** Beyond this, the rest of a response body is not read (the connection is dropped instead of drained). */
const DRAIN_LIMIT_BYTES = 64 * 1024;
export const DEFAULT_REQUEST_TIMEOUT_MS = 15_000;
/** Names whose answers undici's DNS interceptor keeps; beyond it, connections resolve through the same bounded lookup uncached. */
const CACHED_NAMES = 10_000;

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

function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return null;
  if (/^\s*\d+\s*$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * The attempt's error when the target policy refused the address, e.g. `refused by target policy: 127.0.0.1 is a loopback
 * address`: recorded on the attempt, so that the deliveries list tells the subscriber why nothing arrived.
 */
const refusedByPolicy = (reason: string) => `refused by target policy: ${reason}`;

function describeFailure(err: unknown, timedOut: boolean): string {
  if (timedOut) return 'timeout';
  const e = err as { code?: string; name?: string; message?: string; dnsCode?: string; cause?: { code?: string; dnsCode?: string; message?: string } };
  const code = e?.code ?? e?.cause?.code;
  if (code === 'EWEBHOOK_NON_PUBLIC') return refusedByPolicy((e?.code ? e.message : e?.cause?.message) ?? 'a non-public address');
  if (code === 'EWEBHOOK_DNS_TIMEOUT') return 'DNS lookup timed out (dns_timeout)';
  if (code === 'EWEBHOOK_DNS') return `DNS lookup failed (${e?.dnsCode ?? e?.cause?.dnsCode})`;
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `DNS lookup failed (${code})`;
  if (code) return `connection failed (${code})`;
  return 'request failed';
}

/**
 * Sends signed webhook bodies with undici: one keep-alive pool per origin, a hard deadline per
 * request, redirects never followed (a 3xx is a failed attempt), and at most 1 KiB of the answer kept.
 * Names are resolved by the bounded TargetResolver (deadline, lookups in flight, public addresses only)
 * and its answers cached for their TTL by undici's DNS interceptor; IP literals need no lookup.
 */
export class WebhookSender {
  private readonly agent: Agent;
  private readonly dispatcher: Dispatcher;
  private readonly timeoutMs: number;
  private readonly allowPrivateTargets: boolean;

  constructor(options: { allowPrivateTargets: boolean; timeoutMs?: number; connectionsPerOrigin?: number; resolver?: TargetResolver }) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.allowPrivateTargets = options.allowPrivateTargets;
    const resolver = options.resolver ?? new TargetResolver({ allowPrivateTargets: this.allowPrivateTargets });
    this.agent = new Agent({
      connections: options.connectionsPerOrigin ?? 64,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      keepAliveTimeout: 30_000,
      connect: {
        timeout: this.timeoutMs,
        // Reached only by a name the interceptor below did not resolve (its cache full).
        lookup: resolver.connectLookup as never,
      },
    });
    this.dispatcher = this.agent.compose(interceptors.dns({ lookup: resolver.interceptorLookup as never, maxTTL: MAX_ANSWER_TTL_MS, maxItems: CACHED_NAMES }));
  }

  /** `tenant` (the subscription's owner) is who a DNS lookup this send starts counts against. */
  async send(url: string, headers: Record<string, string>, body: string, abort?: AbortSignal, tenant = ''): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    if (!this.allowPrivateTargets) {
      // An IP literal never goes through the lookup above, so it is checked here.
      const { host, isIp } = hostOf(new URL(url));
      if (isIp && !isPublicAddress(host)) {
        return { ok: false, statusCode: null, body: null, error: refusedByPolicy(nonPublicAddressReason(host)!), durationMs: elapsed(), retryAfterMs: null };
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
      // undici notices the abort only once the DNS lookup under way has ended; the deadline must not wait for it.
      const aborted = new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
      const sending = TargetResolver.asTenant(tenant, () => request(url, { method: 'POST', headers, body, dispatcher: this.dispatcher, signal }));
      const res = await Promise.race([sending, aborted]);
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
