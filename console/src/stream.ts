/**
 * The live channel of one organization: `GET /orgs/{org_id}/stream?after=N`, Server-Sent Events read
 * with fetch() so the key travels in the Authorization header (EventSource cannot send one, and a key
 * never goes into a URL). Each event carries `id: <offset>`; after a drop the stream reconnects with
 * backoff and resumes with `after=<last offset>`, so nothing is missed. A server without the stream
 * route (404) is followed through the event feed (`GET /orgs/{org_id}/events?after=N`) once a second; the
 * organizations overview polls that way on purpose past the few streams a browser's connections allow.
 */
import { ApiError, buildUrl, keyRefused, PUBLIC } from './api';
import { currentKey } from './session';
import type { EventEnvelope, EventPage } from './types';

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'stopped';

export interface StreamHandlers {
  onEvent(offset: number, event: EventEnvelope): void;
  onState(state: StreamState, detail?: string): void;
  /** 403 (the key does not cover the org or cannot read): the stream stops. */
  onForbidden(error: ApiError): void;
  /** 410: the resume offset is past the retention; the page reloads its data and restarts. */
  onExpired(): void;
}

/** No byte for this long (the service sends a keep-alive comment every 15 s): the connection is dead. */
const SILENCE_MS = 40_000;
const BACKOFF_MS = [500, 1000, 2000, 4000, 8000];
const POLL_MS = 1000;

interface SseMessage {
  id: string | null;
  event: string;
  data: string;
}

/** An incremental parser of text/event-stream (https://html.spec.whatwg.org/#event-stream-interpretation). */
export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private event = '';
  private id: string | null = null;

  constructor(private readonly dispatch: (message: SseMessage) => void) {}

  push(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      // A lone \r at the end may be the first half of \r\n: wait for the next chunk.
      if (!match || (match[0] === '\r' && match.index === this.buffer.length - 1)) return;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0) this.dispatch({ id: this.id, event: this.event || 'message', data: this.data.join('\n') });
      this.data = [];
      this.event = '';
      return;
    }
    if (line.startsWith(':')) return; // a comment: the keep-alive
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.id = value;
  }
}

export class OrgStream {
  private after: number;
  private controller: AbortController | null = null;
  private stopped = false;
  private failures = 0;
  private polling = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private wake: (() => void) | null = null;
  private readonly online = () => this.wake?.();

  constructor(
    private readonly orgId: string,
    after: number,
    private readonly handlers: StreamHandlers,
    /** With `pollMs`, the feed is polled at that pace from the start instead of holding a stream open. */
    private readonly options: { pollMs?: number } = {},
  ) {
    this.after = after;
    this.polling = options.pollMs !== undefined;
  }

  /** The offset of the last event received: where a reconnect resumes. */
  get lastOffset(): number {
    return this.after;
  }

  start(): void {
    window.addEventListener('online', this.online);
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    window.removeEventListener('online', this.online);
    this.controller?.abort();
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
    this.handlers.onState('stopped');
  }

  private async run(): Promise<void> {
    this.handlers.onState('connecting');
    while (!this.stopped) {
      let outcome: 'dropped' | 'done';
      try {
        outcome = this.polling ? await this.pollOnce() : await this.connect();
      } catch (err) {
        if (this.stopped) return;
        if (err instanceof ApiError) {
          if (err.status === 401) {
            this.stopped = true;
            keyRefused();
            return;
          }
          if (err.status === 403) {
            this.stopped = true;
            this.handlers.onForbidden(err);
            this.handlers.onState('stopped');
            return;
          }
          if (err.status === 410) {
            this.stopped = true;
            this.handlers.onExpired();
            return;
          }
        }
        outcome = 'dropped';
      }
      if (this.stopped) return;
      if (outcome === 'done') {
        this.failures = 0;
        if (this.polling) await this.sleep(this.options.pollMs ?? POLL_MS);
        continue;
      }
      this.failures++;
      this.handlers.onState('reconnecting');
      await this.sleep(BACKOFF_MS[Math.min(this.failures - 1, BACKOFF_MS.length - 1)]);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        if (this.timer) clearTimeout(this.timer);
        this.wake = null;
        resolve();
      };
      this.timer = setTimeout(() => this.wake?.(), ms);
    });
  }

  private headers(accept: string): Record<string, string> {
    const key = currentKey();
    return { accept, ...(key ? { authorization: `Bearer ${key}` } : {}) };
  }

  private async failure(res: Response): Promise<ApiError> {
    const body = await res.json().catch(() => null);
    const detail = (body as { detail?: { error?: string; message?: string } } | null)?.detail;
    return new ApiError(res.status, detail?.error ?? `http_${res.status}`, detail?.message ?? `HTTP ${res.status}`, body);
  }

  /** One SSE connection, read until it ends; 'dropped' when it ended without being stopped. */
  private async connect(): Promise<'dropped' | 'done'> {
    const controller = new AbortController();
    this.controller = controller;
    let silence: ReturnType<typeof setTimeout> | null = null;
    const heard = () => {
      if (silence) clearTimeout(silence);
      silence = setTimeout(() => controller.abort(), SILENCE_MS);
    };
    try {
      heard();
      const res = await fetch(buildUrl(PUBLIC, `/orgs/${encodeURIComponent(this.orgId)}/stream`, { after: this.after }), {
        headers: this.headers('text/event-stream'),
        signal: controller.signal,
        cache: 'no-store',
      });
      if (res.status === 404) {
        const error = await this.failure(res);
        // The route itself is missing (an older service): follow the event feed instead.
        if (error.code === 'not_found') {
          this.polling = true;
          return 'done';
        }
        throw error;
      }
      if (!res.ok || !res.body) throw await this.failure(res);
      this.failures = 0;
      this.handlers.onState('live');
      const parser = new SseParser((message) => {
        const offset = Number(message.id);
        if (!Number.isSafeInteger(offset) || offset <= this.after) return;
        let event: EventEnvelope;
        try {
          event = JSON.parse(message.data) as EventEnvelope;
        } catch {
          return;
        }
        this.after = offset;
        this.handlers.onEvent(offset, event);
      });
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        heard();
        parser.push(value);
      }
      return 'dropped';
    } catch (err) {
      if (err instanceof ApiError) throw err;
      return 'dropped';
    } finally {
      if (silence) clearTimeout(silence);
      this.controller = null;
    }
  }

  /** One poll of the event feed after the last offset (the fallback when the stream route is missing). */
  private async pollOnce(): Promise<'dropped' | 'done'> {
    const controller = new AbortController();
    this.controller = controller;
    try {
      const res = await fetch(buildUrl(PUBLIC, `/orgs/${encodeURIComponent(this.orgId)}/events`, { after: this.after, limit: 500 }), {
        headers: this.headers('application/json'),
        signal: controller.signal,
        cache: 'no-store',
      });
      if (!res.ok) throw await this.failure(res);
      const page = (await res.json()) as EventPage;
      this.handlers.onState('live');
      for (const item of page.items) {
        if (item.offset <= this.after) continue;
        this.after = item.offset;
        this.handlers.onEvent(item.offset, item.event as EventEnvelope);
      }
      return 'done';
    } catch (err) {
      if (err instanceof ApiError) throw err;
      return 'dropped';
    } finally {
      this.controller = null;
    }
  }
}
