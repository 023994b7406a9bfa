import { z } from 'zod';
import { EVENT_TYPES, type EventType } from '../../log/event-types.js';
import { PAGE_BYTES } from '../shared/page-bytes.js';
import { deliveryCompletedData, deliveryOverdueData } from '../deadlines/schema.js';
import { drillCompletedData } from '../drills/schema.js';
import { cursorParam, exerciseFlag, INT4_MAX, timestamp, uuid } from '../shared/schema.js';

/** The `data` of a transition (declared, categorized, resolved). */
export const emergencyChangeData = z
  .object({ emergency: z.record(z.string(), z.unknown()).describe('The Emergency record after the change.'), exercise: exerciseFlag })
  .meta({ id: 'EmergencyChangeData' });

/** The envelope every consumer receives: device frames, webhook bodies and the event feed carry it byte for byte. */
export const eventEnvelope = z
  .object({
    eventId: uuid,
    eventType: z.enum(EVENT_TYPES),
    apiVersion: z.string().meta({ example: '1.0.0' }),
    createdAt: timestamp,
    orgId: uuid,
    emergencyId: uuid,
    sequence: z.number().int().describe("Position in the emergency's timeline, from 1."),
    sandbox: z.literal(true).optional().describe('Present, true, on every event of a sandbox instance: a test, never a live alert.'),
    data: z
      .union([emergencyChangeData, deliveryOverdueData, deliveryCompletedData, drillCompletedData])
      .describe(
        'By eventType: declared, categorized and resolved carry `{emergency, exercise}` (the Emergency after the change); ' +
          'delivery_overdue and delivery_completed carry the acknowledgement-deadline data of the event they watch; ' +
          "drill.completed carries the drill run's report.",
      ),
  })
  .meta({ id: 'EventEnvelope' });

export const feedItem = z.object({
  offset: z.number().int().describe("Position in the organization's stream: the same number devices receive and acknowledge."),
  event: eventEnvelope,
});

export const eventPage = z.object({
  items: z.array(feedItem),
  nextCursor: z
    .string()
    .nullable()
    .describe(
      `Non-null when more items exist now: pass it as \`cursor\` (then \`after\` is ignored). A page ends before \`limit\` once its items reach ${PAGE_BYTES / 1024} KiB.`,
    ),
  lastOffset: z.number().int().describe('The organization\'s newest offset: where "now" is for a poller.'),
});

const eventTypeList = z
  .union([z.string(), z.array(z.string())])
  .transform((value, ctx) => {
    const types = (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(',')).map((v) => v.trim());
    for (const type of types) {
      if (!(EVENT_TYPES as readonly string[]).includes(type)) {
        ctx.addIssue({ code: 'custom', message: `must be one of ${EVENT_TYPES.join(', ')}` });
        return z.NEVER;
      }
    }
    return [...new Set(types)] as EventType[];
  })
  .describe('Only events of these types: repeat the parameter or give a comma list.');

export const feedLimit = z.coerce
  .number({ message: 'must be an integer from 1 to 500' })
  .int('must be an integer from 1 to 500')
  .min(1, 'must be at least 1')
  .max(500, 'must be at most 500')
  .default(100)
  .describe('Page size, 1..500 (default 100).');

export const listEventsQuery = z.object({
  after: z.coerce
    .number({ message: 'must be a non-negative integer offset' })
    .int('must be a non-negative integer offset')
    .min(0, 'must be a non-negative integer offset')
    .max(INT4_MAX, 'must be a non-negative integer offset no larger than 2147483647')
    .default(0)
    .describe('Return events after this offset, 0..2147483647 (default 0: from the oldest retained).'),
  cursor: cursorParam.optional(),
  limit: feedLimit,
  eventType: eventTypeList.optional(),
  emergencyId: z.string().min(1).max(256).optional().describe('Only the events of this emergency.'),
});
export type ListEventsQuery = z.output<typeof listEventsQuery>;

export const emergencyEventsQuery = z.object({ cursor: cursorParam.optional(), limit: feedLimit });
export type EmergencyEventsQuery = z.output<typeof emergencyEventsQuery>;

export const streamQuery = z.object({
  after: z.coerce
    .number({ message: 'must be a non-negative integer offset' })
    .int('must be a non-negative integer offset')
    .min(0, 'must be a non-negative integer offset')
    .max(INT4_MAX, 'must be a non-negative integer offset no larger than 2147483647')
    .optional()
    .describe('Start after this offset, 0..2147483647 (a resume); default: the Last-Event-ID header, else only events from now on.'),
});
