import type { TenantQuota } from '../domain/tenancy/connection-quotas.js';
import { AppError } from '../errors.js';
import type { ConnectionBudget } from './connection-budget.js';

/** The long-lived connections counted per tenant: device sockets and event streams. */
export type ConnectionKind = 'devices' | 'streams';

export type TenantAdmission = { admitted: true; release: () => void } | { admitted: false; error: AppError; retryAfterSeconds: number };

/** Retry-After of a connection beyond its tenant's quota: one of the tenant's own connections must close first. */
export const QUOTA_RETRY_AFTER_SECONDS = 10;
/** Retry-After of a connection beyond the tenant's share of the instance: the instance may have room soon, or another instance now. */
export const SHARE_RETRY_AFTER_SECONDS = 5;

const WORDS: Record<ConnectionKind, { noun: string; code: 'too_many_devices' | 'too_many_streams' }> = {
  devices: { noun: 'device connections', code: 'too_many_devices' },
  streams: { noun: 'event streams', code: 'too_many_streams' },
};

function quotaRefusal(kind: ConnectionKind, scope: 'org' | 'partner', quota: TenantQuota): TenantAdmission {
  const setting = `${kind.toUpperCase()}_PER_${scope.toUpperCase()}`;
  const limit = scope === 'org' ? quota.org : quota.partner;
  const who = scope === 'org' ? 'This organization' : "This organization's partner (all its organizations together)";
  const route = scope === 'org' ? `/api/admin/v1/orgs/${quota.orgId}/connection-quotas` : `/api/admin/v1/partners/${quota.partnerId}/connection-quotas`;
  const message =
    `${who} already holds ${limit} ${WORDS[kind].noun} on this instance, its quota (${setting} unless an admin set its own); ` +
    `close one, or have an admin raise the quota with PATCH ${route} or \`emergency-api admin quota set --${scope}\`.`;
  return { admitted: false, error: new AppError(WORDS[kind].code, message, { quota: limit }), retryAfterSeconds: QUOTA_RETRY_AFTER_SECONDS };
}

function shareRefusal(kind: ConnectionKind, scope: 'org' | 'partner', share: number): TenantAdmission {
  const who = scope === 'org' ? 'this organization' : "this organization's partner";
  const message =
    `This instance keeps part of its ${WORDS[kind].noun} for other tenants, and ${who} already holds ${Math.round(share * 100)}% of them ` +
    `(TENANT_CONNECTION_SHARE); retry after ${SHARE_RETRY_AFTER_SECONDS} s or through another instance.`;
  return { admitted: false, error: new AppError('unavailable', message), retryAfterSeconds: SHARE_RETRY_AFTER_SECONDS };
}

/** Counts per tenant id, forgetting a tenant once it holds nothing. */
class TenantCounts {
  private readonly counts = new Map<string, number>();

  of(id: string): number {
    return this.counts.get(id) ?? 0;
  }

  add(id: string, delta: number): void {
    const next = this.of(id) + delta;
    if (next > 0) this.counts.set(id, next);
    else this.counts.delete(id);
  }
}

/**
 * The long-lived connections of this process by tenant (org and partner), for the quotas of extensions §13: a connection is let in
 * only within its org's and its partner's quota, and only while neither holds more than TENANT_CONNECTION_SHARE of what the instance
 * allows of its kind (MAX_STREAMS, the gateway's connections) or of the open-file budget they share. So one tenant at its limits is
 * refused while the rest of the instance stays free for the others. Admission is synchronous: racing requests are counted one by one.
 */
export class TenantConnections {
  private readonly held = {
    devices: { org: new TenantCounts(), partner: new TenantCounts() },
    streams: { org: new TenantCounts(), partner: new TenantCounts() },
  };
  private readonly both = { org: new TenantCounts(), partner: new TenantCounts() };

  constructor(
    private readonly budget: ConnectionBudget,
    /** TENANT_CONNECTION_SHARE: the fraction of each capacity one org or partner may hold. */
    readonly share: number,
  ) {}

  /** Connections of `kind` the org (or partner) holds on this process. */
  heldBy(kind: ConnectionKind, scope: 'org' | 'partner', id: string): number {
    return this.held[kind][scope].of(id);
  }

  /**
   * Counts one more connection of `kind` for the tenant until `release` is called, or says why not: 429 beyond a quota, 503
   * beyond the tenant's share of `capacity` (the instance's limit for this kind). `replacing`: the connection takes the place of
   * one the tenant holds (a device reconnecting before its old socket has gone), so it does not count twice.
   */
  admit(kind: ConnectionKind, quota: TenantQuota, capacity: number, replacing = false): TenantAdmission {
    const ids = { org: quota.orgId, partner: quota.partnerId };
    const already = replacing ? 1 : 0;
    if (this.held[kind].org.of(ids.org) - already >= quota.org) return quotaRefusal(kind, 'org', quota);
    if (this.held[kind].partner.of(ids.partner) - already >= quota.partner) return quotaRefusal(kind, 'partner', quota);
    const kindShare = this.shareOf(capacity);
    const budgetShare = this.shareOf(this.budget.capacity);
    for (const scope of ['org', 'partner'] as const) {
      if (this.held[kind][scope].of(ids[scope]) - already >= kindShare || this.both[scope].of(ids[scope]) - already >= budgetShare) {
        return shareRefusal(kind, scope, this.share);
      }
    }
    this.count(kind, ids, 1);
    let released = false;
    return {
      admitted: true,
      release: () => {
        if (released) return;
        released = true;
        this.count(kind, ids, -1);
      },
    };
  }

  private shareOf(capacity: number): number {
    return Number.isFinite(capacity) ? Math.max(1, Math.floor(capacity * this.share)) : Number.POSITIVE_INFINITY;
  }

  private count(kind: ConnectionKind, ids: { org: string; partner: string }, delta: number): void {
    for (const scope of ['org', 'partner'] as const) {
      this.held[kind][scope].add(ids[scope], delta);
      this.both[scope].add(ids[scope], delta);
    }
  }
}
