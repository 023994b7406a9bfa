import type { DbHandle } from '../db/connect.js';
import { type AckUpdate, recordAcks } from '../domain/devices/repo.js';
import type { BackgroundWork } from './background-work.js';
import type { DeviceConnection } from './connection.js';

/**
 * Records each device's acknowledged offset, written in batches on a timer (the highest per device).
 *
 * One flush at a time, its rows in device-id order (the order presence updates lock them in too), so
 * two writers never wait on each other's rows; a flush that fails puts its acks back unless a newer
 * one of the same device arrived meanwhile, so an ack is never lost to a busy or restarting database.
 */
export class AckRecorder {
  private readonly pending = new Map<string, AckUpdate>();
  private flushing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly handle: DbHandle,
    private readonly background: BackgroundWork,
    private readonly flushMs: number,
  ) {}

  /** An ack beyond what this connection was sent cannot be about this stream: it is ignored. */
  record(conn: DeviceConnection, offset: number): void {
    if (offset > conn.lastSent) return;
    if (offset > conn.lastAcked) conn.lastAcked = offset;
    const { id: deviceId, orgId } = conn.device;
    const previous = this.pending.get(deviceId);
    if (!previous || previous.offset < offset) this.pending.set(deviceId, { deviceId, orgId, offset, at: new Date().toISOString() });
  }

  start(): void {
    this.timer = setInterval(() => this.background.run(this.flush(), 'ack flush'), this.flushMs);
    this.timer.unref();
  }

  /** Stops the timer and writes the last acks: after a flush still running, one more for what arrived meanwhile. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    if (this.flushing) await this.flushing.catch(() => undefined);
    await this.background.run(this.flush(), 'ack flush');
  }

  private flush(): Promise<void> {
    if (this.flushing || this.pending.size === 0) return Promise.resolve();
    const batch = [...this.pending.values()].sort((a, b) => (a.deviceId < b.deviceId ? -1 : a.deviceId > b.deviceId ? 1 : 0));
    this.pending.clear();
    this.flushing = recordAcks(this.handle, batch)
      .catch((err) => {
        for (const ack of batch) {
          const newer = this.pending.get(ack.deviceId);
          if (!newer || newer.offset < ack.offset) this.pending.set(ack.deviceId, ack);
        }
        throw err;
      })
      .finally(() => {
        this.flushing = null;
      });
    return this.flushing;
  }
}
