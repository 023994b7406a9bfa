import type { DbHandle } from '../db/connect.js';
import { revokedSince } from '../domain/devices/repo.js';
import type { BackgroundWork } from './background-work.js';
import type { ConnectionRegistry } from './connection-registry.js';
import { CloseCode } from './protocol.js';

/** Revocations looked for again on every check, for commit delays and clock skew between processes. */
const MARGIN_MS = 60_000;

/**
 * Closes the open socket of a device whose credential was revoked. Revocations may be written by
 * another process (the admin CLI), so this polls recent revocations of the orgs connected here.
 */
export class RevocationWatch {
  private checkedFrom = Date.now() - MARGIN_MS;
  private stopChecks: (() => void) | undefined;

  constructor(
    private readonly handle: DbHandle,
    private readonly connections: ConnectionRegistry,
    private readonly background: BackgroundWork,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.stopChecks = this.background.every(this.intervalMs, 'revocation check', () => this.check());
  }

  stop(): void {
    this.stopChecks?.();
  }

  private check(): Promise<void> | undefined {
    if (this.connections.size === 0) return undefined;
    const startedAt = Date.now();
    return revokedSince(this.handle.db, this.connections.orgIds(), new Date(this.checkedFrom).toISOString()).then((rows) => {
      for (const row of rows) this.connections.get(row.id)?.close(CloseCode.revoked, 'device credential revoked');
      this.checkedFrom = startedAt - MARGIN_MS;
    });
  }
}
