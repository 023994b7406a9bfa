import type { AppContext } from '../context.js';
import { committedOffsets } from '../events/read.js';
import type { BackgroundWork } from './background-work.js';
import type { DeviceConnection } from './connection.js';
import { OrgStream } from './org-stream.js';
import { ReplayPages } from './replay-pages.js';

/** Payload bytes of recent replay pages kept for the replays of other devices, over every org. */
const REPLAY_PAGES_MAX_BYTES = 32 * 1024 * 1024;
/** How long one replay read serves the others: a reconnect storm's jittered arrivals fall within it. */
const REPLAY_PAGES_TTL_MS = 5_000;

export interface OrgStreamsOptions {
  /** Rows read per query. */
  pageSize: number;
  /** During replay, wait for the socket to drain once this many bytes are queued. */
  replayHighWaterBytes: number;
  /** Backstop for lost wake-ups: compare each org's committed offset with what was read. */
  pollIntervalMs: number;
}

/**
 * One OrgStream per org with devices here. Commits wake them through ctx.bus (in-process, and
 * forwarded from PostgreSQL NOTIFY for writes of other instances); a wake-up is only a hint, so a
 * poll of the committed offsets is the backstop. The poll also drops the streams no device uses.
 */
export class OrgStreams {
  private readonly streams = new Map<string, OrgStream>();
  private readonly replayPages: ReplayPages;
  private polling = false;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly ctx: AppContext,
    private readonly background: BackgroundWork,
    private readonly onError: (err: unknown, where: string) => void,
    private readonly options: OrgStreamsOptions,
  ) {
    const reads = ctx.metrics.deviceReplayReads;
    this.replayPages = new ReplayPages(ctx.db, {
      pageSize: options.pageSize,
      maxBytes: REPLAY_PAGES_MAX_BYTES,
      ttlMs: REPLAY_PAGES_TTL_MS,
      onRead: () => reads.inc(),
    });
  }

  get size(): number {
    return this.streams.size;
  }

  /** Replays to `conn` what it has not had, then makes it live on its org's stream. */
  admit(conn: DeviceConnection, startsAtEnd: boolean): Promise<void> {
    return this.of(conn.device.orgId).admit(conn, startsAtEnd);
  }

  leave(conn: DeviceConnection): void {
    this.streams.get(conn.device.orgId)?.leave(conn);
  }

  start(): void {
    this.unsubscribe = this.ctx.bus.onCommitted((event) => this.streams.get(event.orgId)?.wake(event));
    this.timer = setInterval(() => this.poll(), this.options.pollIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.unsubscribe?.();
    clearInterval(this.timer);
  }

  private of(orgId: string): OrgStream {
    let stream = this.streams.get(orgId);
    if (!stream) {
      const latency = this.ctx.metrics.deviceEventLatency;
      stream = new OrgStream(orgId, this.ctx.db, {
        pageSize: this.options.pageSize,
        replayHighWaterBytes: this.options.replayHighWaterBytes,
        replayPages: this.replayPages,
        onError: this.onError,
        onLiveEvent: (createdAtMs) => latency.observe(Math.max(0, Date.now() - createdAtMs) / 1000),
      });
      this.streams.set(orgId, stream);
    }
    return stream;
  }

  private poll(): void {
    if (this.polling) return;
    for (const [orgId, stream] of this.streams) if (stream.idle) this.streams.delete(orgId);
    const active = [...this.streams.values()].filter((s) => s.live.size > 0);
    if (active.length === 0) return;
    this.polling = true;
    this.background.run(
      committedOffsets(
        this.ctx.db.db,
        active.map((s) => s.orgId),
      )
        .then((offsets) => {
          for (const stream of active) {
            const committed = offsets.get(stream.orgId);
            if (committed !== undefined && stream.readOffset !== null && committed > stream.readOffset) stream.wake();
          }
        })
        .finally(() => {
          this.polling = false;
        }),
      'backstop poll',
    );
  }
}
