import { LRUCache } from 'lru-cache';
import type { DbHandle } from '../db/connect.js';
import { eventsAfter, type StoredEvent } from './reads.js';

/** What a replay gets for one step: the rows after its position, and whether they reach the end read. */
export interface ReplayPage {
  rows: StoredEvent[];
  /** No row was committed after the last of `rows` when they were read (more may have been since). */
  atEnd: boolean;
}

export interface ReplayPagesOptions {
  /** Rows read per query. */
  pageSize: number;
  /** Bytes of payload kept, over every org. */
  maxBytes: number;
  /** How long a page read serves other replays. */
  ttlMs: number;
  /** Called once per database read. */
  onRead?(): void;
}

/** One read of an org's events: the rows after `after`, at most a page. */
interface Page {
  orgId: string;
  after: number;
  rows: StoredEvent[];
  /** A whole page: more rows may follow. A shorter one was the end of the stream when read. */
  full: boolean;
  readAt: number;
}

/** Counted on top of the payload, for the row's other fields and the cache's own bookkeeping. */
const ROW_OVERHEAD_BYTES = 64;

const keyOf = (orgId: string, after: number): string => `${orgId}\u0000${after}`;
const lastOffsetOf = (page: Page): number => page.rows.at(-1)?.offset ?? page.after;

/**
 * The event pages replays read, shared: when many devices of an org resume at once (those of a
 * gateway that went away, reconnecting here), they ask for the same or nearby offsets, and one read
 * serves them all. A replay waits for a read already running from at or before its position, and a
 * page read recently serves every position inside it.
 *
 * A whole page never changes: an org's offsets commit in increasing order and events are only
 * appended. The last page of a stream grows, so it is served only while it reaches at least as far
 * as the caller knows rows exist (the live reader's position); that keeps a replay from waiting on a
 * page it already knows to be short, and anything committed later is read by the replay's next step
 * or by the live reader once it joins. Retention deletes only the oldest events and the device stream
 * has no answer for a pruned range (a device resuming before it gets what is left), so a page, kept a
 * few seconds, can at most repeat rows that retention removed within those seconds.
 */
export class ReplayPages {
  private readonly pages: LRUCache<string, Page>;
  /** The cached pages of each org by their `after`, for finding the one that holds a position. */
  private readonly byOrg = new Map<string, Map<number, Page>>();
  private readonly running = new Map<string, Map<number, Promise<Page>>>();

  constructor(
    private readonly db: DbHandle,
    private readonly options: ReplayPagesOptions,
  ) {
    this.pages = new LRUCache<string, Page>({
      maxSize: options.maxBytes,
      sizeCalculation: pageBytes,
      dispose: (page) => this.forget(page),
    });
  }

  /**
   * The rows of `orgId` after `after`, at most a page. `known` is an offset the caller knows to be
   * committed (or null): a cached end-of-stream page short of it is not served.
   */
  async read(orgId: string, after: number, known: number | null): Promise<ReplayPage> {
    const cached = this.cached(orgId, after, known);
    if (cached) return cached;
    // A read running from at or before this position probably holds it: wait for it instead of reading too.
    const earlier = this.runningBefore(orgId, after);
    if (earlier) {
      await earlier.catch(() => undefined);
      const shared = this.cached(orgId, after, known);
      if (shared) return shared;
    }
    return slice(await this.load(orgId, after), after);
  }

  private cached(orgId: string, after: number, known: number | null): ReplayPage | null {
    const pages = this.byOrg.get(orgId);
    if (!pages) return null;
    const now = Date.now();
    for (const page of pages.values()) {
      if (now - page.readAt > this.options.ttlMs) {
        this.pages.delete(keyOf(page.orgId, page.after));
        continue;
      }
      if (page.after > after) continue;
      const last = lastOffsetOf(page);
      if (page.full ? after < last : after <= last && (known === null || last >= known)) return slice(page, after);
    }
    return null;
  }

  private runningBefore(orgId: string, after: number): Promise<Page> | undefined {
    const reads = this.running.get(orgId);
    if (!reads) return undefined;
    let best: number | undefined;
    for (const from of reads.keys()) if (from <= after && (best === undefined || from > best)) best = from;
    return best === undefined ? undefined : reads.get(best);
  }

  /** Reads the page after `after`, or joins the read of it already running. */
  private load(orgId: string, after: number): Promise<Page> {
    let reads = this.running.get(orgId);
    const pending = reads?.get(after);
    if (pending) return pending;
    if (!reads) {
      reads = new Map();
      this.running.set(orgId, reads);
    }
    const started = reads;
    const read = (async (): Promise<Page> => {
      this.options.onRead?.();
      const rows = await eventsAfter(this.db, orgId, after, this.options.pageSize);
      const page: Page = { orgId, after, rows, full: rows.length >= this.options.pageSize, readAt: Date.now() };
      this.remember(page);
      return page;
    })().finally(() => {
      started.delete(after);
      if (started.size === 0 && this.running.get(orgId) === started) this.running.delete(orgId);
    });
    started.set(after, read);
    return read;
  }

  private remember(page: Page): void {
    this.pages.set(keyOf(page.orgId, page.after), page);
    // A page larger than the whole cache is not kept; only index what the cache holds.
    if (this.pages.peek(keyOf(page.orgId, page.after)) !== page) return;
    let pages = this.byOrg.get(page.orgId);
    if (!pages) {
      pages = new Map();
      this.byOrg.set(page.orgId, pages);
    }
    pages.set(page.after, page);
  }

  private forget(page: Page): void {
    const pages = this.byOrg.get(page.orgId);
    if (pages?.get(page.after) !== page) return;
    pages.delete(page.after);
    if (pages.size === 0) this.byOrg.delete(page.orgId);
  }
}

function pageBytes(page: Page): number {
  let bytes = ROW_OVERHEAD_BYTES;
  for (const row of page.rows) bytes += row.payload.length + ROW_OVERHEAD_BYTES;
  return bytes;
}

function slice(page: Page, after: number): ReplayPage {
  const rows = after === page.after ? page.rows : page.rows.filter((row) => row.offset > after);
  return { rows, atEnd: !page.full };
}
