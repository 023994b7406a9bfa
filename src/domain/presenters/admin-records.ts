import { z } from 'zod';
import type { DeviceRecord } from '../devices/schema.js';
import type { KeyRecord } from '../keys/service.js';
import { type Grant, grantSchema } from '../access/permissions.js';
import { pageOf, timestamp, uuid } from '../shared/schema.js';
import type { SubscriptionRecord } from '../webhooks/schema.js';

/**
 * The admin API's records: what the services return, in the shapes of extensions §5. A secret, token
 * or key appears only in the answer that created (or rotated) it, and never in a stored
 * Idempotency-Key answer: a replay of such a write answers the record without it (secrets are stored
 * hashed or not at all), so a client that lost the answer rotates. The admin routes and the admin CLI
 * (on the database or over the admin API) print these same records.
 */

export const subjectSchema = z.object({ type: z.enum(['partner', 'enterprise', 'org']), id: uuid });

export const apiKeyRecord = z
  .object({
    apiKeyId: uuid,
    name: z.string(),
    subject: subjectSchema,
    permissions: z.array(grantSchema),
    allowedOrgIds: z.array(uuid).nullable(),
    activeUntilDate: timestamp.nullable(),
    status: z.enum(['active', 'inactive']),
    createdAt: timestamp,
    lastUsedAt: timestamp.nullable(),
    key: z.string().optional().describe('The key itself: in the creating or rotating answer only.'),
    previousKeyExpiresAt: timestamp.optional().describe('Rotation only: until when the previous key still works.'),
  })
  .meta({ id: 'ApiKey' });

export function presentApiKey(r: KeyRecord): z.infer<typeof apiKeyRecord> {
  return {
    apiKeyId: r.id,
    name: r.name,
    subject: r.subject as z.infer<typeof subjectSchema>,
    permissions: r.permissions as Grant[],
    allowedOrgIds: r.allowedOrgIds,
    activeUntilDate: r.activeUntilDate,
    status: r.status === 'active' ? 'active' : 'inactive',
    createdAt: r.createdAt,
    lastUsedAt: r.lastUsedAt,
  };
}

export const webhookRecord = z
  .object({
    webhookId: uuid,
    url: z.string(),
    subject: subjectSchema,
    allowedOrgIds: z.array(uuid).nullable(),
    eventTypes: z.array(z.string()).nullable().describe('null: every event type.'),
    status: z.enum(['active', 'disabled']),
    disabledReason: z.string().nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
    secret: z.string().optional().describe('The signing secret (whsec_...): in the creating answer only.'),
  })
  .meta({ id: 'Webhook' });

export function presentWebhook(r: SubscriptionRecord): z.infer<typeof webhookRecord> {
  return {
    webhookId: r.id,
    url: r.url,
    subject: r.subject as z.infer<typeof subjectSchema>,
    allowedOrgIds: r.allowedOrgIds,
    eventTypes: r.eventTypes,
    status: r.status === 'active' ? 'active' : 'disabled',
    disabledReason: r.disabledReason,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

export const deviceRecord = z
  .object({
    deviceId: uuid,
    orgId: uuid,
    name: z.string(),
    status: z.enum(['active', 'revoked']),
    createdAt: timestamp,
    revokedAt: timestamp.nullable(),
    token: z.string().optional().describe('The device token (enk_dev_...): in the creating or rotating answer only.'),
  })
  .meta({ id: 'Device' });

export function presentDevice(r: DeviceRecord): z.infer<typeof deviceRecord> {
  return { deviceId: r.id, orgId: r.orgId, name: r.name, status: r.status, createdAt: r.createdAt, revokedAt: r.revokedAt };
}

export const devicePageRecord = pageOf(deviceRecord);
