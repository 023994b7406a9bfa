import { z } from 'zod';
import { ACK_DEADLINE_MAX_SECONDS, ACK_DEADLINE_MIN_SECONDS, SILENT_DEVICES_LISTED } from '../deadlines/schema.js';
import { exerciseFlag, pageOf, timestamp, uuid } from '../shared/schema.js';

/** A run resolves its exercise this long after the acknowledgement deadline unless the drill says otherwise. */
export const RESOLVE_AFTER_DEADLINE_SECONDS = 30;
export const RESOLVE_AFTER_MAX_SECONDS = 86_400;
/** A missed occurrence still runs when a worker finds it at most this late; an older one is skipped. */
export const CATCH_UP_MS = 3_600_000;

const deadlineMessage = `must be an integer from ${ACK_DEADLINE_MIN_SECONDS} to ${ACK_DEADLINE_MAX_SECONDS}`;
const ackDeadlineSeconds = z
  .number({ message: deadlineMessage })
  .int(deadlineMessage)
  .min(ACK_DEADLINE_MIN_SECONDS, deadlineMessage)
  .max(ACK_DEADLINE_MAX_SECONDS, deadlineMessage)
  .describe("Seconds the base stations have to acknowledge the drill's alert: its acknowledgement deadline (§7).")
  .meta({ example: 60 });
const resolveMessage = `must be an integer from ${ACK_DEADLINE_MIN_SECONDS} to ${RESOLVE_AFTER_MAX_SECONDS}, or null`;
const resolveAfterSeconds = z
  .number({ message: resolveMessage })
  .int(resolveMessage)
  .min(ACK_DEADLINE_MIN_SECONDS, resolveMessage)
  .max(RESOLVE_AFTER_MAX_SECONDS, resolveMessage)
  .nullable()
  .describe(
    `Seconds from the declare to the resolve, when the report is taken; at least ackDeadlineSeconds. null or absent: the deadline plus ${RESOLVE_AFTER_DEADLINE_SECONDS}.`,
  )
  .meta({ example: 90 });
const schedule = z
  .string()
  .max(1000)
  .nullable()
  .describe(
    'An RFC 5545 RRULE, optionally after a DTSTART line (e.g. "DTSTART;TZID=Europe/Berlin:20260105T100000\\nRRULE:FREQ=MONTHLY;BYDAY=1MO"); ' +
      'without DTSTART it starts at the creation. Its next occurrence must fall within a year, and two occurrences may not be closer ' +
      'together than a run lasts (resolveAfterSeconds). null or absent: no schedule, run on demand.',
  )
  .meta({ example: 'FREQ=MONTHLY;BYDAY=1MO;BYHOUR=10;BYMINUTE=0;BYSECOND=0' });

const fields = {
  name: z.string().trim().min(1).max(200).describe('What the drill is, e.g. "Monthly siren test".'),
  categoryId: z.string().min(1).max(64).nullable().describe("The exercise's category; null or absent: the organization's Uncategorized."),
  description: z.string().max(4000).nullable().describe("The exercise emergency's description: what base stations show."),
  schedule,
  ackDeadlineSeconds,
  resolveAfterSeconds,
};

export const drillInput = z
  .strictObject({
    name: fields.name,
    categoryId: fields.categoryId.optional(),
    description: fields.description.optional(),
    schedule: fields.schedule.optional(),
    ackDeadlineSeconds: fields.ackDeadlineSeconds,
    resolveAfterSeconds: fields.resolveAfterSeconds.optional(),
  })
  .meta({ id: 'CreateDrillRequest' });
export type DrillInput = z.infer<typeof drillInput>;

export const drillChanges = z
  .strictObject({
    name: fields.name.optional(),
    categoryId: fields.categoryId.optional(),
    description: fields.description.optional(),
    schedule: fields.schedule.optional(),
    ackDeadlineSeconds: fields.ackDeadlineSeconds.optional(),
    resolveAfterSeconds: fields.resolveAfterSeconds.optional(),
  })
  .meta({ id: 'UpdateDrillRequest' });
export type DrillChanges = z.infer<typeof drillChanges>;

export const drillRecord = z
  .object({
    drillId: uuid,
    orgId: uuid,
    name: z.string(),
    categoryId: z.string().nullable(),
    description: z.string().nullable(),
    schedule: z.string().nullable(),
    ackDeadlineSeconds: z.number().int(),
    resolveAfterSeconds: z.number().int().describe('Seconds from the declare to the resolve (the default, the deadline plus 30, when none was given).'),
    nextRunAt: timestamp.nullable().describe('The next scheduled run; null without a schedule or when the schedule has no occurrence left.'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Drill' });
export type DrillRecord = z.infer<typeof drillRecord>;
export const drillList = pageOf(drillRecord).meta({ id: 'DrillList' });

export const DRILL_RUN_STATUSES = ['starting', 'running', 'completed'] as const;

const percentile = z.number().int().nullable();

/** A run's report: measured when the run completes, and as it stands while it runs. */
export const drillRunRecord = z
  .object({
    runId: uuid,
    drillId: uuid,
    emergencyId: uuid.nullable().describe('The exercise emergency; null until it is declared (a run just claimed).'),
    scheduledFor: timestamp.describe('The occurrence this run is for (when it was asked for, for a run started on demand).'),
    startedAt: timestamp.nullable().describe("The declare: when the drill's alert went out."),
    completedAt: timestamp.nullable().describe('The resolve, when the report was taken; null while the run is under way.'),
    status: z.enum(DRILL_RUN_STATUSES).describe('starting (claimed), running (declared, figures as they stand) or completed (final figures).'),
    targeted: z.number().int().describe('Base stations the alert targeted (as its receipts count them).'),
    acknowledged: z.number().int().describe('Of those, the ones that acknowledged it.'),
    ackMs: z
      .object({ p50: percentile, p95: percentile, max: percentile })
      .describe("Milliseconds from the alert to each acknowledging station's first acknowledgement (nearest-rank percentiles); null when none acknowledged."),
    silentDevices: z
      .array(z.object({ deviceId: uuid, name: z.string(), online: z.boolean(), lastSeenAt: timestamp.nullable() }))
      .describe(`Targeted stations that did not acknowledge, by name: at most ${SILENT_DEVICES_LISTED}.`),
    silentDevicesTotal: z.number().int().describe('Every targeted station that did not acknowledge (targeted - acknowledged).'),
    webhooks: z
      .object({ delivered: z.number().int(), failed: z.number().int(), pending: z.number().int() })
      .describe("Webhook deliveries of the alert's emergency.declared event."),
    passed: z.boolean().describe('acknowledged == targeted: every targeted station acknowledged.'),
  })
  .meta({ id: 'DrillRun' });
export type DrillRunRecord = z.infer<typeof drillRunRecord>;
export const drillRunList = pageOf(drillRunRecord).meta({ id: 'DrillRunList' });

/** The data of drill.completed: the completed run's report. */
export const drillCompletedData = drillRunRecord
  .extend({ exercise: exerciseFlag })
  .describe("The run's report (DrillRun), status completed.")
  .meta({ id: 'DrillCompletedData' });
