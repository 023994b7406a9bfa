import { z } from 'zod';
import { PAGE_BYTES } from '../shared/page-bytes.js';
import { cursorParam, pageOf, timestamp, uuid } from '../shared/schema.js';

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

/** Events per page of receipts: at most RECEIPT_EVENTS_MAX, RECEIPT_EVENTS_DEFAULT when `limit` is not given. */
export const RECEIPT_EVENTS_MAX = 100;
export const RECEIPT_EVENTS_DEFAULT = 20;
/** Devices each event of a page lists; the rest are paged per event with `deviceCursor`. */
export const DEVICES_PER_EVENT = 10;

export const eventReceipt = z.object({
  eventId: uuid,
  eventType: z.string(),
  sequence: z.number().int(),
  offset: z.number().int(),
  createdAt: timestamp,
  deadlineAt: timestamp
    .nullable()
    .describe("When the event's acknowledgement deadline falls (the organization's or category's ackDeadlineSeconds after it); null: none."),
  overdue: z
    .boolean()
    .describe(
      'True once the deadline passed with a targeted device silent (an emergency.delivery_overdue names them); it stays true ' +
        'after emergency.delivery_completed (compare acknowledged with targeted).',
    ),
  devices: z.object({
    targeted: z.number().int().describe('Active devices that existed when the event was created.'),
    acknowledged: z.number().int().describe('Targeted devices that have acknowledged it.'),
    pending: z
      .array(z.object({ deviceId: uuid, name: z.string(), online: z.boolean(), ackedOffset: z.number().int() }))
      .describe(
        `Targeted devices that have not acknowledged it (targeted - acknowledged of them), by name: at most ${DEVICES_PER_EVENT} per event ` +
          '(with deviceCursor, at most `limit`).',
      ),
    acknowledgedBy: z
      .array(z.object({ deviceId: uuid, name: z.string(), acknowledgedAt: timestamp.nullable().describe('Time of the first ack that covered the event.') }))
      .optional()
      .describe('With ?detail=devices only: devices that acknowledged it, by name, listed after the pending ones.'),
    nextCursor: z
      .string()
      .nullable()
      .describe(
        "More of this event's devices: pass as `deviceCursor` to get the next ones (the answer then holds this event only). " +
          'null when the lists above end it.',
      ),
  }),
  webhooks: z.object({
    targeted: z.number().int().describe('Subscriptions that matched the event.'),
    succeeded: z.number().int(),
    failed: z.number().int().describe('Deliveries that exhausted their retries (or were refused for good).'),
    pending: z.number().int().describe('Deliveries not yet made or being retried.'),
  }),
});
export type EventReceipt = z.infer<typeof eventReceipt>;

export const emergencyReceiptsSchema = z
  .object({
    emergencyId: uuid,
    events: z.array(eventReceipt).describe(`Events in sequence order: at most \`limit\`, fewer once they reach ${PAGE_BYTES / 1024} KiB.`),
    nextCursor: z.string().nullable().describe('Pass as `cursor` for the next events; null on the last page (and with deviceCursor).'),
  })
  .meta({ id: 'EmergencyReceipts' });
export type EmergencyReceipts = z.infer<typeof emergencyReceiptsSchema>;

export const receiptsQuery = z.object({
  detail: z.enum(['devices']).optional().describe('`devices` adds, per event, the devices that acknowledged it and when.'),
  limit: z.coerce
    .number({ message: `must be an integer from 1 to ${RECEIPT_EVENTS_MAX}` })
    .int(`must be an integer from 1 to ${RECEIPT_EVENTS_MAX}`)
    .min(1, 'must be at least 1')
    .max(RECEIPT_EVENTS_MAX, `must be at most ${RECEIPT_EVENTS_MAX}`)
    .default(RECEIPT_EVENTS_DEFAULT)
    .describe(`Events per page, 1..${RECEIPT_EVENTS_MAX} (default ${RECEIPT_EVENTS_DEFAULT}); with deviceCursor, devices per page.`),
  cursor: cursorParam.optional(),
  deviceCursor: cursorParam
    .optional()
    .describe(
      'The `devices.nextCursor` of an event, passed unchanged: the answer holds that event only, with its next `limit` devices ' +
        '(`cursor` is then ignored). A deviceCursor this endpoint did not hand out is a 422 with `type` `cursor_invalid` at `["query","deviceCursor"]`.',
    ),
});
export type ReceiptsQuery = z.output<typeof receiptsQuery>;
