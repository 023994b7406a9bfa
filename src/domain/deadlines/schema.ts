import { z } from 'zod';
import { EMERGENCY_CHANGE_TYPES } from '../../log/event-types.js';
import { exerciseFlag, timestamp, uuid } from '../shared/schema.js';

export const ACK_DEADLINE_MIN_SECONDS = 5;
export const ACK_DEADLINE_MAX_SECONDS = 3600;

const RANGE_MESSAGE = `must be an integer from ${ACK_DEADLINE_MIN_SECONDS} to ${ACK_DEADLINE_MAX_SECONDS}, or null`;

/** The setting as a write body carries it: seconds, or null. */
export const ackDeadlineSeconds = z
  .number({ message: RANGE_MESSAGE })
  .int(RANGE_MESSAGE)
  .min(ACK_DEADLINE_MIN_SECONDS, RANGE_MESSAGE)
  .max(ACK_DEADLINE_MAX_SECONDS, RANGE_MESSAGE)
  .nullable()
  .meta({ example: 30 });

/** The emergency transitions base stations must receive: each gets a deadline when one applies. */
export const WATCHED_EVENT_TYPES = EMERGENCY_CHANGE_TYPES;

export { DELIVERY_COMPLETED, DELIVERY_OVERDUE } from '../../log/event-types.js';

/** Silent devices an overdue event names at most; `silentDevicesTotal` counts them all. */
export const SILENT_DEVICES_LISTED = 100;

const watchedEvent = {
  emergencyId: uuid,
  eventOffset: z.number().int().describe("The watched event's offset in the organization's stream."),
  eventType: z.enum(WATCHED_EVENT_TYPES).describe('The type of the watched event.'),
};

export const deliveryOverdueData = z
  .object({
    ...watchedEvent,
    deadlineSeconds: z.number().int().describe('The acknowledgement deadline that applied to the watched event.'),
    targeted: z.number().int().describe('Devices the watched event targeted (as its receipts count them).'),
    acknowledged: z.number().int().describe('Of those, the devices that had acknowledged it at the deadline.'),
    silentDevices: z
      .array(
        z.object({
          deviceId: uuid,
          name: z.string(),
          online: z.boolean().describe('Connected to a gateway that heard from it within the last 90 s.'),
          lastSeenAt: timestamp.nullable(),
        }),
      )
      .describe(`Targeted devices that had not acknowledged it, by name: at most ${SILENT_DEVICES_LISTED}.`),
    silentDevicesTotal: z.number().int().describe('Every targeted device that had not acknowledged it (targeted - acknowledged).'),
    exercise: exerciseFlag,
  })
  .meta({ id: 'DeliveryOverdueData' });

export const deliveryCompletedData = z
  .object({
    ...watchedEvent,
    targeted: z.number().int().describe('Devices the watched event targets now, every one of which has acknowledged it.'),
    completedAfterMs: z.number().int().describe('From the delivery_overdue event to the acknowledgement that completed the delivery.'),
    exercise: exerciseFlag,
  })
  .meta({ id: 'DeliveryCompletedData' });

/** The data as worked out by the watch; `exercise` is added with the event, from its emergency. */
export type DeliveryOverdueData = Omit<z.infer<typeof deliveryOverdueData>, 'exercise'>;
export type DeliveryCompletedData = Omit<z.infer<typeof deliveryCompletedData>, 'exercise'>;
