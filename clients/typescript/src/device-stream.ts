import { AsyncLocalStorage } from 'node:async_hooks';
import WebSocket, { type RawData } from 'ws';
import type { EmergencyEvent } from './webhooks.js';

export const DEVICE_STREAM_PATH = '/devices/v1/stream';

/** Close codes the server uses (README "Base-station devices"). */
export const DeviceCloseCode = {
  goingAway: 1001,
  invalidFrame: 1007,
  revoked: 4401,
  silent: 4408,
  replaced: 4409,
  tooSlow: 4429,
} as const;

export interface DeviceEventContext {
  /** The organization's stream offset of this event (1, 2, 3, … with no holes). */
  offset: number;
}

/** Why the stream stopped for good (`DeviceStream.done`). */
export type DeviceStreamEnd =
  /** close() was called. */
  | { reason: 'closed' }
  /** The server closed with 4401: the device's credential was revoked. A new token is needed. */
  | { reason: 'revoked' }
  /** The upgrade was refused with 401: the token is missing, malformed, unknown or revoked. */
  | { reason: 'unauthorized'; status: 401 }
  /** The upgrade was refused with 400 (a bad `after`): retrying the same request cannot succeed. */
  | { reason: 'rejected'; status: number };

export type DeviceStreamStatus =
  | { type: 'connected'; after: number | undefined; url: string }
  | { type: 'disconnected'; code: number; reason: string; retryInMs: number }
  | { type: 'refused'; status: number; retryInMs: number }
  | { type: 'stopped'; end: DeviceStreamEnd };

export interface DeviceStreamOptions {
  /**
   * The service's origin (`https://…` or `http://…`, turned into `wss://…`/`ws://…`), or the full
   * stream URL (`wss://host/devices/v1/stream`). Several (the gateways of one service) are tried in
   * turn: each reconnect goes to the next, so a device whose gateway went away reaches another.
   */
  baseUrl: string | readonly string[];
  /** The device token, `enk_dev_…`. */
  token: string;
  /**
   * The last offset this device fully processed before (persist `lastOffset` to resume after a
   * restart). Without it the first connection receives only events committed from then on.
   */
  after?: number;
  /**
   * Called once per event, in offset order, one at a time. The event is acknowledged after the
   * returned promise resolves; if it throws (or rejects), the event is not acknowledged and the
   * stream reconnects with `after` so that it is delivered again.
   */
  onEvent(event: EmergencyEvent, context: DeviceEventContext): void | Promise<void>;
  /** Connection changes, for logging. */
  onStatus?(status: DeviceStreamStatus): void;
  /** A failed onEvent; defaults to console.error. */
  onError?(error: unknown, context: DeviceEventContext): void;
  /**
   * Reconnect back-off with full jitter: each wait is drawn uniformly between 0 and a ceiling that
   * starts at `initialDelayMs` (500) and doubles up to `maxDelayMs` (30,000). The draw spreads the
   * devices of a gateway that went away over the whole interval instead of bringing them all back at once.
   */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  /** With no frame (nor WebSocket ping) for this long the connection is treated as dead (default 75 s). */
  silenceTimeoutMs?: number;
  /** The opening handshake may take this long (default 10 s). */
  handshakeTimeoutMs?: number;
}

/** A connection that stayed up this long resets the back-off to its first delay. */
const STABLE_CONNECTION_MS = 10_000;

interface Connection {
  ws: WebSocket;
  /** Highest event offset received on it (from `after`, where the server started). */
  received: number;
  /** Highest offset acknowledged on it. */
  acked: number;
  openedAt: number | undefined;
  /** HTTP status when the upgrade was refused. */
  refused: number | undefined;
  watchdog: NodeJS.Timeout | undefined;
}

/** The stream URL from a service origin or a stream URL. */
export function deviceStreamUrl(baseUrl: string): URL {
  const url = new URL(baseUrl);
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  else if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new TypeError(`unsupported URL scheme ${url.protocol} (use http(s):// or ws(s)://)`);
  const path = url.pathname.replace(/\/+$/, '');
  if (!path.endsWith(DEVICE_STREAM_PATH)) url.pathname = `${path}${DEVICE_STREAM_PATH}`;
  url.search = '';
  url.hash = '';
  return url;
}

/**
 * A base station's event stream: connects with the device token, hands every event to `onEvent` in
 * order, acknowledges it once the handler has returned, answers the server's pings, and after any
 * disconnect reconnects (with jittered back-off, to the next of its URLs) with `after=<last offset handled>`, so no event is missed or
 * handed over twice. It stops on a revoked (4401) or refused (401) credential, or on close().
 */
export class DeviceStream {
  /** Resolves when the stream stops for good; never rejects. */
  readonly done: Promise<DeviceStreamEnd>;

  private readonly urls: URL[];
  /** Index in `urls` of the next connection. */
  private nextUrl = 0;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly silenceTimeoutMs: number;
  private readonly handshakeTimeoutMs: number;
  private processed: number | undefined;
  private delayMs: number;
  private current: Connection | null = null;
  private queue: { offset: number; event: EmergencyEvent }[] = [];
  /** True while drain() runs; `idle` settles when it returns. */
  private draining = false;
  private idle: Promise<void> = Promise.resolve();
  private retryTimer: NodeJS.Timeout | undefined;
  private end: DeviceStreamEnd | null = null;
  /** Set while onEvent runs, so that close() called from the handler does not wait for itself. */
  private readonly inHandler = new AsyncLocalStorage<boolean>();
  private finish!: (end: DeviceStreamEnd) => void;

  constructor(private readonly options: DeviceStreamOptions) {
    if (!options.token) throw new TypeError('token is required');
    if (options.after !== undefined && !(Number.isSafeInteger(options.after) && options.after >= 0)) {
      throw new TypeError('after must be a non-negative integer');
    }
    this.urls = (typeof options.baseUrl === 'string' ? [options.baseUrl] : [...options.baseUrl]).map(deviceStreamUrl);
    if (this.urls.length === 0) throw new TypeError('baseUrl must name at least one URL');
    this.processed = options.after;
    this.initialDelayMs = options.reconnect?.initialDelayMs ?? 500;
    this.maxDelayMs = options.reconnect?.maxDelayMs ?? 30_000;
    this.silenceTimeoutMs = options.silenceTimeoutMs ?? 75_000;
    this.handshakeTimeoutMs = options.handshakeTimeoutMs ?? 10_000;
    this.delayMs = this.initialDelayMs;
    this.done = new Promise((resolve) => {
      this.finish = resolve;
    });
    this.connect();
  }

  /** The offset of the last event onEvent completed (the `after` of the next connection). */
  get lastOffset(): number | undefined {
    return this.processed;
  }

  /** True while a connection is open. */
  get connected(): boolean {
    return this.current?.ws.readyState === WebSocket.OPEN;
  }

  /**
   * Stops the stream: closes the connection (1000), cancels reconnecting, and waits for a running
   * onEvent to return (unless called from onEvent itself).
   */
  async close(): Promise<void> {
    this.stop({ reason: 'closed' });
    const conn = this.current;
    if (conn && conn.ws.readyState !== WebSocket.CLOSED) {
      const closed = new Promise<void>((resolve) => conn.ws.once('close', () => resolve()));
      const force = setTimeout(() => conn.ws.terminate(), 2_000);
      if (conn.ws.readyState === WebSocket.CONNECTING) conn.ws.terminate();
      else conn.ws.close(1000, 'closed by the device');
      await closed;
      clearTimeout(force);
    }
    if (!this.inHandler.getStore()) await this.idle;
  }

  private stop(end: DeviceStreamEnd): void {
    if (this.end) return;
    this.end = end;
    clearTimeout(this.retryTimer);
    this.queue = [];
    this.options.onStatus?.({ type: 'stopped', end });
    this.finish(end);
  }

  private connect(): void {
    if (this.end) return;
    const target = this.urls[this.nextUrl]!;
    const url = new URL(target);
    this.nextUrl = (this.nextUrl + 1) % this.urls.length;
    const after = this.processed;
    if (after !== undefined) url.searchParams.set('after', String(after));
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${this.options.token}` },
      handshakeTimeout: this.handshakeTimeoutMs,
      perMessageDeflate: false,
    });
    const conn: Connection = { ws, received: after ?? 0, acked: 0, openedAt: undefined, refused: undefined, watchdog: undefined };
    this.current = conn;
    const heard = () => {
      clearTimeout(conn.watchdog);
      conn.watchdog = setTimeout(() => ws.terminate(), this.silenceTimeoutMs);
    };
    ws.on('unexpected-response', (_req, res) => {
      conn.refused = res.statusCode ?? 0;
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      conn.openedAt = Date.now();
      heard();
      this.options.onStatus?.({ type: 'connected', after, url: target.href });
      // Handled before a disconnect but not acknowledged on that connection: acknowledge it here.
      this.acknowledge(conn);
    });
    ws.on('ping', heard);
    ws.on('message', (data: RawData, isBinary: boolean) => {
      heard();
      if (isBinary || this.current !== conn || this.end) return;
      this.receive(conn, data.toString());
    });
    ws.on('error', () => undefined);
    ws.on('close', (code: number, reason: Buffer) => this.closed(conn, code, reason.toString()));
  }

  private receive(conn: Connection, text: string): void {
    let frame: { type?: unknown; offset?: unknown; event?: unknown };
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof frame !== 'object' || frame === null) return;
    if (frame.type === 'ping') {
      conn.ws.send('{"type":"pong"}', () => undefined);
    } else if (frame.type === 'event' && typeof frame.offset === 'number' && typeof frame.event === 'object' && frame.event !== null) {
      conn.received = Math.max(conn.received, frame.offset);
      this.queue.push({ offset: frame.offset, event: frame.event as EmergencyEvent });
      if (!this.draining) {
        this.draining = true;
        this.idle = this.drain();
      }
    }
  }

  /** Hands queued events to onEvent one at a time, in order; acknowledges each once it returned. */
  private async drain(): Promise<void> {
    try {
      for (;;) {
        const item = this.queue.shift();
        if (!item || this.end) return;
        if (this.processed !== undefined && item.offset <= this.processed) {
          if (this.current) this.acknowledge(this.current);
          continue;
        }
        try {
          await this.inHandler.run(true, () => this.options.onEvent(item.event, { offset: item.offset }));
        } catch (err) {
          (this.options.onError ?? defaultOnError)(err, { offset: item.offset });
          // Not acknowledged: reconnect from the last handled offset so the event comes again.
          this.queue = [];
          this.current?.ws.terminate();
          continue;
        }
        this.processed = item.offset;
        if (this.current) this.acknowledge(this.current);
      }
    } finally {
      this.draining = false;
    }
  }

  /** Acknowledges, on this connection, the highest handled offset the server has sent on it. */
  private acknowledge(conn: Connection): void {
    if (this.processed === undefined || conn.ws.readyState !== WebSocket.OPEN) return;
    const offset = Math.min(this.processed, conn.received);
    if (offset <= conn.acked) return;
    conn.acked = offset;
    conn.ws.send(JSON.stringify({ type: 'ack', offset }), () => undefined);
  }

  private closed(conn: Connection, code: number, reason: string): void {
    clearTimeout(conn.watchdog);
    if (this.current === conn) this.current = null;
    if (this.end) return;
    const end: DeviceStreamEnd | null =
      conn.refused === 401
        ? { reason: 'unauthorized', status: 401 }
        : conn.refused === 400
          ? { reason: 'rejected', status: 400 }
          : code === DeviceCloseCode.revoked
            ? { reason: 'revoked' }
            : null;
    if (end) {
      this.stop(end);
      return;
    }
    if (conn.openedAt !== undefined && Date.now() - conn.openedAt >= STABLE_CONNECTION_MS) this.delayMs = this.initialDelayMs;
    // Full jitter: see DeviceStreamOptions.reconnect.
    const wait = Math.round(Math.random() * this.delayMs);
    this.delayMs = Math.min(this.delayMs * 2, this.maxDelayMs);
    if (conn.refused !== undefined) this.options.onStatus?.({ type: 'refused', status: conn.refused, retryInMs: wait });
    else this.options.onStatus?.({ type: 'disconnected', code, reason, retryInMs: wait });
    this.retryTimer = setTimeout(() => this.connect(), wait);
  }
}

function defaultOnError(error: unknown, context: DeviceEventContext): void {
  console.error(`DeviceStream: onEvent failed for offset ${context.offset}; it will be delivered again`, error);
}

/** Starts a device stream (see DeviceStream). */
export function connectDevice(options: DeviceStreamOptions): DeviceStream {
  return new DeviceStream(options);
}
