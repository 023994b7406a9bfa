import { WebSocket } from 'ws';
import type { DeviceConnection } from './connection.js';
import { CloseCode } from './protocol.js';

/** The open device connections of this instance, one per device. */
export class ConnectionRegistry {
  private readonly byDevice = new Map<string, DeviceConnection>();

  get size(): number {
    return this.byDevice.size;
  }

  get(deviceId: string): DeviceConnection | undefined {
    return this.byDevice.get(deviceId);
  }

  values(): IterableIterator<DeviceConnection> {
    return this.byDevice.values();
  }

  /** The orgs that have a device connected here. */
  orgIds(): string[] {
    return [...new Set([...this.byDevice.values()].map((c) => c.device.orgId))];
  }

  /**
   * One logical stream per device: a newer connection (a reconnect racing the old socket's timeout)
   * replaces the older one.
   */
  add(conn: DeviceConnection): void {
    this.byDevice.get(conn.device.id)?.close(CloseCode.replaced, 'replaced by a newer connection of this device');
    this.byDevice.set(conn.device.id, conn);
  }

  /** Forgets `conn` unless a newer connection of its device has replaced it already. */
  remove(conn: DeviceConnection): void {
    if (this.byDevice.get(conn.device.id) === conn) this.byDevice.delete(conn.device.id);
  }

  /**
   * Closes every connection with a reconnect hint and resolves once all have closed; a peer that
   * does not answer the close within `graceMs` is cut off.
   */
  async closeAll(graceMs: number): Promise<void> {
    const open = [...this.byDevice.values()];
    const closed = Promise.all(
      open.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.ws.readyState === WebSocket.CLOSED) return resolve();
            c.ws.once('close', () => resolve());
          }),
      ),
    );
    for (const conn of open) conn.close(CloseCode.goingAway, 'server shutting down; reconnect with after');
    let graceTimer: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise((r) => (graceTimer = setTimeout(r, graceMs)))]);
    clearTimeout(graceTimer);
    for (const conn of open) conn.terminate();
    await closed;
  }
}
