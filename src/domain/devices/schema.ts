import { z } from 'zod';

/** `enk_dev_` + 8 hex (the public device token id, indexed) + 64 hex (the secret). */
export const DEVICE_TOKEN_PATTERN = /^enk_dev_([0-9a-f]{8})([0-9a-f]{64})$/;

export const createDeviceInput = z.object({
  name: z.string().trim().min(1, 'must not be empty').max(128, 'must be at most 128 characters'),
});
export type CreateDeviceInput = z.infer<typeof createDeviceInput>;

export interface DeviceRecord {
  id: string;
  orgId: string;
  name: string;
  status: 'active' | 'revoked';
  createdAt: string;
  revokedAt: string | null;
  /** Connected to a gateway instance that has heard from it recently. */
  online: boolean;
  lastSeenAt: string | null;
  connectedAt: string | null;
  disconnectedAt: string | null;
  /** Highest org stream offset the device acknowledged with an `ack` frame (0: none yet). */
  ackedOffset: number;
  ackedAt: string | null;
}

/** The identity a gateway connection runs under once its token has been verified. */
export interface AuthenticatedDevice {
  id: string;
  orgId: string;
  name: string;
}
