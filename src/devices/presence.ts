import type { DbHandle } from '../db/connect.js';
import { markConnected, markDisconnected, type PresenceUpdate, touchLastSeen } from '../domain/devices/repo.js';
import type { BackgroundWork } from './background-work.js';
import type { DeviceConnection } from './connection.js';

interface Written {
  /** The connected mark, which the disconnected mark waits for so it never lands first. */
  connected: Promise<unknown>;
  /** The lastHeardAt last written to the database. */
  lastSeen: number;
}

/** Writes which devices are connected here and when each was last heard from, in the background. */
export class Presence {
  private readonly written = new WeakMap<DeviceConnection, Written>();

  constructor(
    private readonly handle: DbHandle,
    private readonly background: BackgroundWork,
  ) {}

  connected(conn: DeviceConnection): void {
    const at = new Date(conn.lastHeardAt).toISOString();
    const connected = this.background.run(markConnected(this.handle.db, conn.device, conn.id, at), 'presence');
    this.written.set(conn, { connected, lastSeen: conn.lastHeardAt });
  }

  disconnected(conn: DeviceConnection): void {
    const lastSeen = new Date(conn.lastHeardAt).toISOString();
    const at = new Date().toISOString();
    const connected = this.written.get(conn)?.connected ?? Promise.resolve();
    this.background.run(
      connected.then(() => markDisconnected(this.handle.db, conn.device, conn.id, lastSeen, at)),
      'presence',
    );
  }

  /**
   * Refreshes last_seen_at of the connections heard from since their last write, in one batch. The
   * time written is `now` to the second, so the devices of an org share one statement.
   */
  touch(conns: Iterable<DeviceConnection>, now: number): void {
    const lastSeenAt = new Date(Math.floor(now / 1000) * 1000).toISOString();
    const seen: PresenceUpdate[] = [];
    for (const conn of conns) {
      const written = this.written.get(conn);
      if (!written || conn.lastHeardAt <= written.lastSeen) continue;
      written.lastSeen = conn.lastHeardAt;
      seen.push({ deviceId: conn.device.id, orgId: conn.device.orgId, lastSeenAt });
    }
    if (seen.length > 0) this.background.run(touchLastSeen(this.handle.db, seen), 'presence');
  }
}
