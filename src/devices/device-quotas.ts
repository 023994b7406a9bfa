import type { Duplex } from 'node:stream';
import type { AppContext } from '../context.js';
import type { AuthenticatedDevice } from '../domain/devices/schema.js';
import { tenantQuotaOf } from '../domain/tenancy/connection-quotas.js';
import type { TenantConnections } from '../edge/tenant-connections.js';
import type { AppError } from '../errors.js';

/** Why an authenticated device is not let in: the upgrade's plain HTTP answer. */
export interface QuotaRefusal {
  error: AppError;
  retryAfterSeconds: number;
}

/**
 * The device side of the per-tenant connection quotas: an authenticated device counts against its org's
 * and partner's device quotas (and their share of the instance) from its upgrade until its socket closes.
 */
export class DeviceQuotas {
  constructor(
    private readonly ctx: AppContext,
    private readonly tenants: TenantConnections,
    /** The gateway's own limit on device connections (its `maxConnections`). */
    private readonly capacity: number,
    /** Whether the device has a connection open here, which a new one replaces. */
    private readonly isConnected: (deviceId: string) => boolean,
  ) {}

  /** Counts the device until `socket` closes (whatever becomes of the upgrade), or says why it may not connect. */
  async admit(device: AuthenticatedDevice, socket: Duplex): Promise<QuotaRefusal | null> {
    const pending = tenantQuotaOf(this.ctx, 'devices', device.orgId);
    const quota = pending instanceof Promise ? await pending : pending;
    // The org is gone (its device row went with it): authentication will refuse it from now on.
    if (!quota) return null;
    const admission = this.tenants.admit('devices', quota, this.capacity, this.isConnected(device.id));
    if (!admission.admitted) return admission;
    if (socket.destroyed) admission.release();
    else socket.once('close', admission.release);
    return null;
  }
}
