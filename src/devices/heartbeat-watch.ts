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

/**
 * Pings every device, drops the ones that have gone silent, and has presence record who was heard
 * from. Silence is checked more often than pings are sent, so a dead peer goes soon after the timeout.
 */
export class HeartbeatWatch {
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly connections: ConnectionRegistry,
    private readonly presence: Presence,
    private readonly options: HeartbeatOptions,
  ) {}

  start(): void {
    const silenceCheckMs = Math.max(50, Math.min(5_000, Math.floor(this.options.silenceTimeoutMs / 6)));
    this.timers = [setInterval(() => this.beat(), this.options.pingIntervalMs), setInterval(() => this.dropSilent(), silenceCheckMs)];
    for (const t of this.timers) t.unref();
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  private beat(): void {
    const now = Date.now();
    const alive: DeviceConnection[] = [];
    for (const conn of this.connections.values()) {
      if (this.closeIfSilent(conn, now)) continue;
      conn.ping();
      alive.push(conn);
    }
    this.presence.touch(alive, now);
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
