import type { DbHandle } from '../db/connect.js';
import { eventsAfter, type StoredEvent } from './read.js';
import type { CommittedEvent } from '../db/unit-of-work.js';

/**
 * The live half of an org's stream, shared by the surfaces that push events (the device gateway's
 * WebSockets, the console's Server-Sent Events): one reader fetches the committed rows after
 * `readOffset` once and hands each to `deliver`, which writes it to every live member. Wake-ups are
 * hints: a wake-up during a read coalesces into one more read, and a lost one is covered by the
 * surface's backstop poll (rows stay in the table meanwhile).
 */
export abstract class LiveReader<Member> {
  readonly live = new Set<Member>();
  /** Highest offset the reader has fetched; null until the first member joins. */
  readOffset: number | null = null;
  protected running = false;
  private again = false;

  constructor(
    readonly orgId: string,
    protected readonly db: DbHandle,
    protected readonly pageSize: number,
  ) {}

  /** Writes one row to every live member, dropping those that can no longer take it. */
  protected abstract deliver(row: StoredEvent): void;
  /** A read failed; the next wake-up or poll reads again. */
  protected abstract readFailed(err: unknown): void;

  /**
   * A commit happened (or may have): read what is new. A commit of this process that hands over its
   * rows and continues right where the reader stands is delivered at once: the alert leaves before
   * the declare's answer and without a read of what was just written.
   */
  wake(committed?: CommittedEvent): void {
    if (this.live.size === 0) return;
    if (this.running) {
      this.again = true;
      return;
    }
    const written = committed?.written;
    let offset = this.readOffset;
    if (written && written.length > 0 && offset !== null && committed!.offset - written.length === offset) {
      try {
        for (const event of written) {
          this.deliver({ offset: ++offset, payload: event.payload, createdAtMs: Date.parse(event.created_at) });
          this.readOffset = offset;
        }
      } catch (err) {
        // Never into the committer that told us: its write stands. The next wake-up or poll reads.
        this.readFailed(err);
      }
      return;
    }
    void this.pump();
  }

  private async pump(): Promise<void> {
    this.running = true;
    try {
      do {
        this.again = false;
        while (this.live.size > 0 && this.readOffset !== null) {
          const rows = await eventsAfter(this.db, this.orgId, this.readOffset, this.pageSize);
          for (const row of rows) {
            this.deliver(row);
            this.readOffset = row.offset;
          }
          if (rows.length < this.pageSize) break;
        }
      } while (this.again && this.live.size > 0);
    } catch (err) {
      this.readFailed(err);
    } finally {
      this.running = false;
    }
  }
}
