import type { AppContext } from '../context.js';
import type { Following, LogSink, StoredEvent } from '../log/follow.js';
import { type DeviceFrameWritten, deviceFrameWritten } from '../observability/trace-channels.js';
import type { DeviceConnection } from './connection.js';
import { eventFrame, wireTextFrame } from './protocol.js';

/** A live event framed for the wire, and how many of its org's sockets took it. */
interface LiveFrame {
  wire: Buffer;
  reached: number;
}

/**
 * Each device socket follows its org's event log from the offset it resumed after: replayed first, then live. A live event is
 * framed once for every socket of its org (the log hands the same row to all of them in one loop), and its delivery is
 * measured once.
 */
export class DeviceStreams {
  private readonly following = new Map<DeviceConnection, Following>();
  private readonly framed = new WeakMap<StoredEvent, LiveFrame>();
  private readonly stopMeasuring: () => void;

  constructor(
    private readonly ctx: AppContext,
    private readonly onError: (err: unknown, where: string) => void,
    /** During replay, wait for the socket to drain once this many bytes are queued. */
    private readonly replayHighWaterBytes: number,
  ) {
    // Published once the log has handed the row to every live socket of the org (over several turns for a large org).
    this.stopMeasuring = ctx.eventLog.onHandedOver((orgId, row) => {
      const frame = this.framed.get(row);
      if (frame && deviceFrameWritten.hasSubscribers) {
        deviceFrameWritten.publish({ orgId, offset: row.offset, sockets: frame.reached } satisfies DeviceFrameWritten);
      }
    });
  }

  stop(): void {
    this.stopMeasuring();
  }

  /** Orgs with devices on this instance. */
  get orgs(): number {
    return new Set([...this.following.keys()].map((conn) => conn.device.orgId)).size;
  }

  /** Replays to `conn` what it has not had, then makes it live. Resolves when it is live or gone. */
  admit(conn: DeviceConnection, startsAtEnd: boolean): Promise<void> {
    const orgId = conn.device.orgId;
    const highWater = this.replayHighWaterBytes;
    const sink: LogSink = {
      take: (row, live) => (live ? this.sendLive(conn, row) : conn.sendStored(row.offset, row.payload)),
      get backedUp() {
        return conn.ws.bufferedAmount > highWater;
      },
      drained: () => conn.drained(),
    };
    const following = this.ctx.eventLog.follow(orgId, conn.lastSent, sink, { atEnd: startsAtEnd, onError: this.onError });
    this.following.set(conn, following);
    return following.caughtUp;
  }

  leave(conn: DeviceConnection): void {
    this.following.get(conn)?.close();
    this.following.delete(conn);
  }

  private sendLive(conn: DeviceConnection, row: StoredEvent): boolean {
    let frame = this.framed.get(row);
    if (!frame) {
      frame = { wire: wireTextFrame(eventFrame(row.offset, row.payload)), reached: 0 };
      this.framed.set(row, frame);
      this.ctx.metrics.deviceEventLatency.observe(Math.max(0, Date.now() - row.createdAtMs) / 1000);
    }
    if (!conn.sendLive(row.offset, frame.wire)) return false;
    frame.reached++;
    return true;
  }
}
