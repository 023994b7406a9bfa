import type { DbHandle } from '../db/connect.js';
import type { DeviceConnection } from './connection.js';
import type { StoredEvent } from '../events/read.js';
import { LiveReader } from '../events/live-reader.js';
import type { ReplayPages } from './replay-pages.js';
import { eventFrame, wireTextFrame } from './protocol.js';
import { type DeviceFrameWritten, deviceFrameWritten } from '../observability/trace-channels.js';

export interface OrgStreamOptions {
  /** Rows read per query, by the live reader and by a replay. */
  pageSize: number;
  /** During replay, wait for the socket to drain once this many bytes are queued. */
  replayHighWaterBytes: number;
  /** Where replays read, shared with the replays of the org's other devices. */
  replayPages: ReplayPages;
  onError(err: unknown, where: string): void;
  /** Called once per live event written to the org's sockets, with the event's creation time. */
  onLiveEvent?(createdAtMs: number): void;
}

/**
 * Everything this instance sends to the devices of one org. Live members get each row from one
 * reader; a connection resuming from an older offset replays on its own (a slow replay never delays
 * the others, though the database reads are shared: see ReplayPages) and joins the live set in one
 * synchronous step once its `lastSent` has reached `readOffset`, so no row can fall between the
 * replay and the live reader.
 */
export class OrgStream extends LiveReader<DeviceConnection> {
  /** Connections still replaying. */
  readonly replaying = new Set<DeviceConnection>();

  constructor(
    orgId: string,
    db: DbHandle,
    private readonly options: OrgStreamOptions,
  ) {
    super(orgId, db, options.pageSize);
  }

  get idle(): boolean {
    return this.live.size === 0 && this.replaying.size === 0 && !this.running;
  }

  protected deliver(row: StoredEvent): void {
    // Framed once, so every device of the org gets the same bytes.
    const wire = wireTextFrame(eventFrame(row.offset, row.payload));
    let reached = 0;
    for (const conn of this.live) {
      if (conn.sendLive(row.offset, wire)) reached++;
      else this.live.delete(conn);
    }
    if (deviceFrameWritten.hasSubscribers) {
      deviceFrameWritten.publish({ orgId: this.orgId, offset: row.offset, sockets: reached } satisfies DeviceFrameWritten);
    }
    this.options.onLiveEvent?.(row.createdAtMs);
  }

  protected readFailed(err: unknown): void {
    // The backstop poll wakes this stream again; the rows stay in the table meanwhile.
    this.options.onError(err, 'live read');
  }

  /**
   * Replays the rows after `conn.lastSent`, then makes the connection live. Resolves when it is live
   * or gone.
   */
  async admit(conn: DeviceConnection, startsAtEnd: boolean): Promise<void> {
    this.replaying.add(conn);
    // Whether the last read found nothing beyond what was sent: only then may a connection start
    // the live reader from its own position.
    let atEnd = startsAtEnd;
    try {
      while (conn.open) {
        // Join only with a drained buffer, so the live reader does not find it over the bound at once.
        if (conn.ws.bufferedAmount > this.options.replayHighWaterBytes) await conn.drained();
        if (!conn.open) return;
        if (this.tryJoin(conn, atEnd)) return;
        const page = await this.options.replayPages.read(this.orgId, conn.lastSent, this.readOffset);
        const rows = page.rows;
        atEnd = page.atEnd;
        for (const row of rows) {
          if (!conn.sendStored(row.offset, row.payload)) return;
          // Paced by the device: a replay of many events never sits in server memory at once.
          if (conn.ws.bufferedAmount > this.options.replayHighWaterBytes) await conn.drained();
        }
        // Nothing newer yet the live reader is ahead: this read's snapshot predates the reader's.
        // Read again shortly; never skip ahead, that would be a gap.
        if (rows.length === 0) await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      this.replaying.delete(conn);
    }
  }

  /** Synchronous on purpose: see the class comment. */
  private tryJoin(conn: DeviceConnection, atEnd: boolean): boolean {
    if (this.live.size === 0 && !this.running) {
      // Nobody depends on readOffset: it may start from this connection's position, once the
      // replay has reached the end (else the live reader would send the backlog in one burst).
      if (!atEnd) return false;
      this.readOffset = conn.lastSent;
    } else if (this.readOffset === null || conn.lastSent < this.readOffset) {
      return false;
    }
    this.live.add(conn);
    // Rows committed between the replay's last read and now were announced while this connection
    // was not live; read once more so they are not left waiting for the next commit.
    this.wake();
    return true;
  }

  leave(conn: DeviceConnection): void {
    this.live.delete(conn);
    this.replaying.delete(conn);
  }
}
