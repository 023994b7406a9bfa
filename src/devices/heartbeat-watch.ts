import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ConnectionRegistry } from './connection-registry.js';
import type { DeviceConnection } from './connection.js';
import type { Presence } from './presence.js';
import { CloseCode } from './protocol.js';

export interface HeartbeatOptions {
  /** `{"type":"ping"}` (and a WebSocket ping) to every device at this interval. */
  pingIntervalMs: number;
  /** A device heard from neither frame nor pong for this long is dropped. */
  silenceTimeoutMs: number;
}

/** Devices pinged in one turn of the event loop: thousands at once would hold it from every tenant's alert path. */
const PINGS_PER_TURN = 32;

/**
 * Pings every device (a few at a time, with a turn of the event loop between), drops the ones that have gone silent, and has presence record who was heard
 * from. Silence is checked more often than pings are sent, so a dead peer goes soon after the timeout.
 */
export class HeartbeatWatch {
  private timers: NodeJS.Timeout[] = [];
  private beating = false;

  constructor(
    private readonly connections: ConnectionRegistry,
    private readonly presence: Presence,
    private readonly options: HeartbeatOptions,
  ) {}

  start(): void {
    const silenceCheckMs = Math.max(50, Math.min(5_000, Math.floor(this.options.silenceTimeoutMs / 6)));
    this.timers = [setInterval(() => void this.beat(), this.options.pingIntervalMs), setInterval(() => this.dropSilent(), silenceCheckMs)];
    for (const t of this.timers) t.unref();
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  private async beat(): Promise<void> {
    if (this.beating) return;
    this.beating = true;
    try {
      const now = Date.now();
      const alive: DeviceConnection[] = [];
      for (const conn of [...this.connections.values()]) {
        if (this.timers.length === 0) return;
        if (this.closeIfSilent(conn, now)) continue;
        conn.ping();
        alive.push(conn);
        if (alive.length % PINGS_PER_TURN === 0) await nextTurn();
      }
      this.presence.touch(alive, now);
    } finally {
      this.beating = false;
    }
  }

  private dropSilent(): void {
    const now = Date.now();
    for (const conn of this.connections.values()) this.closeIfSilent(conn, now);
  }

  /** The close frame tells a live-but-mute client why; a dead peer is destroyed after the close grace. */
  private closeIfSilent(conn: DeviceConnection, now: number): boolean {
    if (now - conn.lastHeardAt <= this.options.silenceTimeoutMs) return false;
    conn.close(CloseCode.silent, 'nothing received from the device within the silence timeout');
    return true;
  }
}
