import type { ServerResponse } from 'node:http';
import type { DbHandle } from '../db/connect.js';
import { eventsAfter, type StoredEvent } from '../db/reads.js';
import type { EventBus } from '../domain/events/bus.js';
import { LiveReader } from '../edge/live-reader.js';

/**
 * The org's event stream as Server-Sent Events, for browsers (the operator console): the same
 * committed rows, offsets and envelopes as the device gateway, read once per org and written to every
 * watching connection. A browser authenticates with the Authorization header (fetch-streamed SSE),
 * so no key ever sits in a URL, and resumes with `after` (or Last-Event-ID) after a disconnect.
 */

const PAGE = 500;
/** A connection with this much unsent data is too slow: it is closed and resumes with its last id. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const KEEP_ALIVE_MS = 15_000;
/** Wake-ups are hints; this poll bounds the delay when one is lost (e.g. another instance's commit). */
const BACKSTOP_POLL_MS = 1_000;

const EVENT_TYPE = /"eventType":"([a-z._]+)"/;

function frameOf(row: StoredEvent): string {
  const type = EVENT_TYPE.exec(row.payload)?.[1] ?? 'event';
  return `id: ${row.offset}\nevent: ${type}\ndata: ${row.payload}\n\n`;
}

class Watcher {
  closed = false;
  constructor(
    readonly res: ServerResponse,
    /** Highest offset written to this connection. */
    public last: number,
  ) {}

  send(offset: number, frame: string): void {
    if (this.closed || offset <= this.last) return;
    this.res.write(frame);
    this.last = offset;
    if (this.res.writableLength > MAX_BUFFERED_BYTES) this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.res.end();
  }
}

/** Everything this process streams to the watchers of one org; see OrgStream for the device side. */
class OrgFeed extends LiveReader<Watcher> {
  constructor(
    orgId: string,
    db: DbHandle,
    private readonly onError: (err: unknown) => void,
  ) {
    super(orgId, db, PAGE);
  }

  get idle(): boolean {
    return this.live.size === 0 && !this.running;
  }

  protected deliver(row: StoredEvent): void {
    const frame = frameOf(row);
    for (const w of this.live) {
      w.send(row.offset, frame);
      if (w.closed) this.live.delete(w);
    }
  }

  protected readFailed(err: unknown): void {
    this.onError(err);
  }

  /** Replays what the watcher missed on its own, then joins the live readers in one synchronous step (no row can fall between). */
  async admit(w: Watcher): Promise<void> {
    while (!w.closed) {
      if (this.live.size === 0 && !this.running) {
        const rows = await eventsAfter(this.db, this.orgId, w.last, PAGE);
        for (const row of rows) w.send(row.offset, frameOf(row));
        if (rows.length === PAGE || w.closed) continue;
        if (this.live.size === 0 && !this.running) {
          this.readOffset = w.last;
          this.live.add(w);
          this.wake();
          return;
        }
      }
      if (this.readOffset !== null && w.last >= this.readOffset) {
        this.live.add(w);
        this.wake();
        return;
      }
      const rows = await eventsAfter(this.db, this.orgId, w.last, PAGE);
      for (const row of rows) w.send(row.offset, frameOf(row));
      // Caught up with the table but behind the live reader's snapshot: read again shortly.
      if (rows.length === 0) await new Promise((r) => setTimeout(r, 20));
    }
  }
}

export class BrowserStreams {
  private readonly feeds = new Map<string, OrgFeed>();
  private readonly watchers = new Set<Watcher>();
  private readonly unsubscribe: () => void;
  private readonly timers: NodeJS.Timeout[];

  constructor(
    private readonly db: DbHandle,
    bus: EventBus,
    private readonly onError: (err: unknown) => void,
  ) {
    this.unsubscribe = bus.onCommitted((event) => this.feeds.get(event.orgId)?.wake(event));
    const poll = setInterval(() => {
      for (const [orgId, feed] of this.feeds) {
        if (feed.idle) this.feeds.delete(orgId);
        else feed.wake();
      }
    }, BACKSTOP_POLL_MS);
    const keepAlive = setInterval(() => {
      for (const w of this.watchers) if (!w.closed) w.res.write(': keep-alive\n\n');
    }, KEEP_ALIVE_MS);
    this.timers = [poll, keepAlive];
    for (const t of this.timers) t.unref();
  }

  get watching(): number {
    return this.watchers.size;
  }

  /** Streams the org's events after `after` to `res` (headers already sent) until either side closes. */
  watch(orgId: string, after: number, res: ServerResponse): void {
    const w = new Watcher(res, after);
    this.watchers.add(w);
    let feed = this.feeds.get(orgId);
    if (!feed) {
      feed = new OrgFeed(orgId, this.db, this.onError);
      this.feeds.set(orgId, feed);
    }
    const joined = feed;
    res.on('close', () => {
      w.closed = true;
      joined.live.delete(w);
      this.watchers.delete(w);
    });
    joined.admit(w).catch((err) => {
      this.onError(err);
      w.close();
    });
  }

  /** Ends every stream (the server is stopping); browsers reconnect with their last id. */
  close(): void {
    this.unsubscribe();
    for (const t of this.timers) clearInterval(t);
    for (const w of this.watchers) w.close();
  }
}
