import type { AppContext } from '../context.js';
import { resendsDue } from '../domain/deadlines/repo.js';
import { silentAmong } from '../domain/deadlines/service.js';
import type { BackgroundWork } from './background-work.js';
import type { DeviceConnection } from './connection.js';
import type { ConnectionRegistry } from './connection-registry.js';
import { eventFrame } from './protocol.js';

/**
 * Half-way to an event's acknowledgement deadline, sends the event again to the devices connected
 * here that it targets and that have not acknowledged it. Each instance polls the database for the
 * re-sends that fell due since its previous check, for the orgs connected to it, and walks its own
 * connections: no timer per device or per event, and with several instances each serves its own
 * devices. A device that is not connected gets the event by replay when it reconnects.
 */
export class ResendWatch {
  /** Re-sends due up to this time were handled; the first check starts at the gateway's start. */
  private checkedUpTo = new Date().toISOString();
  private stopChecks: (() => void) | undefined;

  constructor(
    private readonly ctx: AppContext,
    private readonly connections: ConnectionRegistry,
    private readonly background: BackgroundWork,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.stopChecks = this.background.every(this.intervalMs, 'acknowledgement re-send', () => this.check());
  }

  stop(): void {
    this.stopChecks?.();
  }

  private check(): Promise<void> | undefined {
    const upTo = new Date().toISOString();
    if (this.connections.size === 0) {
      this.checkedUpTo = upTo;
      return undefined;
    }
    return this.resend(this.checkedUpTo, upTo).then(() => {
      this.checkedUpTo = upTo;
    });
  }

  private async resend(from: string, upTo: string): Promise<void> {
    const byOrg = new Map<string, DeviceConnection[]>();
    for (const conn of this.connections.values()) {
      const list = byOrg.get(conn.device.orgId);
      if (list) list.push(conn);
      else byOrg.set(conn.device.orgId, [conn]);
    }
    const due = await resendsDue(this.ctx.db.db, [...byOrg.keys()], from, upTo);
    for (const event of due) {
      // Connections that have had the event (a later one gets it in order anyway) and have not acknowledged it here.
      const waiting = (byOrg.get(event.orgId) ?? []).filter((c) => c.open && c.lastSent >= event.offset && c.lastAcked < event.offset);
      if (waiting.length === 0) continue;
      const silent = await silentAmong(
        this.ctx.db.db,
        event.orgId,
        { stream_offset: event.offset, created_at: event.createdAt },
        waiting.map((c) => c.device.id),
      );
      const frame = eventFrame(event.offset, event.payload);
      for (const conn of waiting) {
        if (silent.has(conn.device.id) && conn.resend(event.offset, frame)) this.ctx.metrics.deviceResends.inc();
      }
    }
  }
}
