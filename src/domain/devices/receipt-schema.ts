import { z } from 'zod';
import { pageOf, timestamp, uuid } from '../shared/schema.js';

export const deviceReceiptItem = z
  .object({
    deviceId: uuid,
    name: z.string(),
    status: z.enum(['active', 'revoked']),
    online: z.boolean().describe('Connected to a gateway that heard from it within the last 90 s.'),
    connectedAt: timestamp.nullable(),
    lastSeenAt: timestamp.nullable(),
    ackedOffset: z.number().int().describe('The device has every event up to this offset (0: none acknowledged yet).'),
    ackedAt: timestamp.nullable(),
    lag: z.number().int().describe("The organization's newest offset minus ackedOffset: 0 means fully caught up."),
  })
  .meta({ id: 'DeviceStatus' });
export type DeviceReceiptItem = z.infer<typeof deviceReceiptItem>;

export const devicePage = pageOf(deviceReceiptItem);

export const eventReceipt = z.object({
  eventId: uuid,
  eventType: z.string(),
  sequence: z.number().int(),
  offset: z.number().int(),
  createdAt: timestamp,
  devices: z.object({
    targeted: z.number().int().describe('Active devices that existed when the event was created.'),
    acknowledged: z.number().int(),
    pending: z
      .array(z.object({ deviceId: uuid, name: z.string(), online: z.boolean(), ackedOffset: z.number().int() }))
      .describe('Targeted devices that have not acknowledged it.'),
    acknowledgedBy: z
      .array(z.object({ deviceId: uuid, name: z.string(), acknowledgedAt: timestamp.nullable().describe('Time of the first ack that covered the event.') }))
      .optional()
      .describe('With ?detail=devices only.'),
  }),
  webhooks: z.object({
    targeted: z.number().int().describe('Subscriptions that matched the event.'),
    succeeded: z.number().int(),
    failed: z.number().int().describe('Deliveries that exhausted their retries (or were refused for good).'),
    pending: z.number().int().describe('Deliveries not yet made or being retried.'),
  }),
});
export type EventReceipt = z.infer<typeof eventReceipt>;

export const emergencyReceiptsSchema = z.object({ emergencyId: uuid, events: z.array(eventReceipt) }).meta({ id: 'EmergencyReceipts' });
export type EmergencyReceipts = z.infer<typeof emergencyReceiptsSchema>;

export const receiptsQuery = z.object({
  detail: z.enum(['devices']).optional().describe('`devices` adds, per event, the devices that acknowledged it and when.'),
});
