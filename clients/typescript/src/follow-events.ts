import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { PUBLIC_API_PATH } from './http.js';
import type { EmergencyEvent } from './webhooks.js';

export interface FollowEventsOptions {
  /** The server, e.g. `https://alerts.example.com` (the public API's path is added). */
  baseUrl: string;
  /** An API key holding `events:read` for the organization (`enk_live_...`). */
  apiKey: string;
  /** Start after this offset (0: from the oldest event kept); without it, with the next event committed. */
  after?: number;
  /** Stops following: the iteration ends without an error. */
  signal?: AbortSignal;
  /** Back-off between reconnects: from `initialDelayMs` (500), doubling up to `maxDelayMs` (30,000), jittered. */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Another fetch (a test's, a proxy's); the global one by default. */
  fetch?: typeof fetch;
}

/** One event of the organization's stream, with its offset (the SSE id). */
export interface FollowedEvent {
  offset: number;
  event: EmergencyEvent;
}

/** A refusal that no reconnect can cure (401, 403, 404, 410 `events_expired`, 422): following stops with it. */
export class FollowEventsError extends Error {
  override name = 'FollowEventsError';
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`the event stream was refused with ${status}: ${JSON.stringify(body)}`);
  }
}

const RETRYABLE = new Set([408, 425, 429, 500, 502, 503, 504]);

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

async function bodyOf(res: Response): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Follows an organization's events as they commit (`GET /orgs/{org_id}/stream`, Server-Sent Events) with an API key, in
 * offset order: after a dropped connection, a server restart or a 429/503 it reconnects with `Last-Event-ID` (and `after`)
 * set to the last offset handed out, so that nothing is missed or handed out twice. Ends when `signal` aborts; throws a
 * FollowEventsError on a refusal no retry cures.
 *
 * ```ts
 * for await (const { offset, event } of followEvents(orgId, { baseUrl, apiKey, after: 0 })) console.log(offset, event.eventType);
 * ```
 */
export async function* followEvents(orgId: string, options: FollowEventsOptions): AsyncGenerator<FollowedEvent, void, undefined> {
  if (!options.apiKey) throw new TypeError('apiKey is required');
  if (options.after !== undefined && !(Number.isSafeInteger(options.after) && options.after >= 0)) {
    throw new TypeError('after must be a non-negative integer');
  }
  const doFetch = options.fetch ?? fetch;
  const initialDelayMs = options.reconnect?.initialDelayMs ?? 500;
  const maxDelayMs = options.reconnect?.maxDelayMs ?? 30_000;
  const url = new URL(`${PUBLIC_API_PATH}/orgs/${encodeURIComponent(orgId)}/stream`, options.baseUrl);
  let last = options.after;
  let delayMs = initialDelayMs;
  while (!options.signal?.aborted) {
    let waitMs = delayMs;
    try {
      if (last !== undefined) url.searchParams.set('after', String(last));
      const res = await doFetch(url, {
        headers: {
          authorization: `Bearer ${options.apiKey}`,
          accept: 'text/event-stream',
          ...(last !== undefined ? { 'last-event-id': String(last) } : {}),
        },
        signal: options.signal,
      });
      if (!res.ok || !res.body) {
        const body = await bodyOf(res);
        if (!RETRYABLE.has(res.status)) throw new FollowEventsError(res.status, body);
        const retryAfter = Number(res.headers.get('retry-after'));
        if (Number.isFinite(retryAfter) && retryAfter > 0) waitMs = Math.max(waitMs, retryAfter * 1000);
      } else {
        const pending: EventSourceMessage[] = [];
        const parser = createParser({ onEvent: (message) => pending.push(message) });
        const decoder = new TextDecoder();
        for await (const chunk of res.body) {
          parser.feed(decoder.decode(chunk, { stream: true }));
          // Connected and reading: the next reconnect starts its back-off afresh.
          delayMs = initialDelayMs;
          for (const message of pending.splice(0)) {
            const offset = Number(message.id);
            if (!Number.isSafeInteger(offset) || (last !== undefined && offset <= last)) continue;
            last = offset;
            yield { offset, event: JSON.parse(message.data) as EmergencyEvent };
          }
        }
      }
    } catch (err) {
      if (err instanceof FollowEventsError) throw err;
      if (options.signal?.aborted) return;
      // A dropped connection or a network failure: reconnect from the last offset handed out.
    }
    if (options.signal?.aborted) return;
    await sleep(waitMs * (0.5 + Math.random() / 2), options.signal);
    delayMs = Math.min(delayMs * 2, maxDelayMs);
  }
}
