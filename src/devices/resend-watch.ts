import { setImmediate as nextTurn } from 'node:timers/promises';
import type { AppContext } from '../context.js';
import { resendsDue } from '../domain/deadlines/repo.js';
import { silentAmong } from '../domain/deadlines/service.js';
import type { BackgroundWork } from './background-work.js';
import type { DeviceConnection } from './connection.js';
import type { ConnectionRegistry } from './connection-registry.js';
import { eventFrame } from './protocol.js';
import { ResendAllowance } from './resend-allowance.js';

/** Re-sends made in one turn of the event loop. */
const RESENDS_PER_TURN = 32;

/**
 * Half-way to an event's acknowledgement deadline, sends the event again to the devices connected
 * here that it targets and that have not acknowledged it. Each instance polls the database for the
 * re-sends that fell due since its previous check, for the orgs connected to it, and walks its own
 * connections: no timer per device or per event, and with several instances each serves its own
 * devices. A device that is not connected gets the event by replay when it reconnects. Each device
 * gets at most ACK_RESENDS_PER_DEVICE_PER_MINUTE re-sends (ResendAllowance), and the events due are
 * handled one at a time with a turn of the event loop between them (and every RESENDS_PER_TURN re-sends).
 */
export class ResendWatch {
  /** Re-sends due up to this time were handled; the first check starts at the gateway's start. */
  private checkedUpTo = new Date().toISOString();
  private stopChecks: (() => void) | undefined;
  private readonly allowance: ResendAllowance;

  constructor(
    private readonly ctx: AppContext,
    private readonly connections: ConnectionRegistry,
    private readonly background: BackgroundWork,
    private readonly intervalMs: number,
  ) {
    this.allowance = new ResendAllowance(ctx.config.ACK_RESENDS_PER_DEVICE_PER_MINUTE);
  }

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
    const { metrics } = this.ctx;
    for (const [i, event] of due.entries()) {
      if (i > 0) await nextTurn();
      const now = Date.now();
      // Connections that have had the event (a later one gets it in order anyway) and have not acknowledged it here.
      const waiting = (byOrg.get(event.orgId) ?? []).filter((c) => c.open && c.lastSent >= event.offset && c.lastAcked < event.offset);
      // A device out of re-sends is not even looked up: what a burst of declares costs here stops growing with it.
      const allowed = waiting.filter((c) => this.allowance.allows(c.device.id, now));
      if (allowed.length < waiting.length) metrics.deviceResendsLimited.inc(waiting.length - allowed.length);
      if (allowed.length === 0) continue;
      const silent = await silentAmong(
        this.ctx.db.db,
        event.orgId,
        { stream_offset: event.offset, created_at: event.createdAt },
        allowed.map((c) => c.device.id),
      );
      const frame = eventFrame(event.offset, event.payload);
      let sent = 0;
      for (const conn of allowed) {
        if (!silent.has(conn.device.id) || !this.allowance.take(conn.device.id, now)) continue;
        if (conn.resend(event.offset, frame)) metrics.deviceResends.inc();
        // A large org's re-sends take turns with everyone else's work, as its live fan-out does.
        if (++sent % RESENDS_PER_TURN === 0) await nextTurn();
      }
    }
    const connected = new Set([...this.connections.values()].map((c) => c.device.id));
    this.allowance.forget((deviceId) => connected.has(deviceId), Date.now());
  }
}
