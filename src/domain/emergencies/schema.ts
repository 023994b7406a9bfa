import { z } from 'zod';
import { MAX_METADATA_DEPTH, nestsDeeperThan } from '../shared/json-guards.js';
import { actorInput, actorOutput, cursorParam, isoTimestampInput, limitParam, pageOf, timestamp, uuid } from '../shared/schema.js';

export const EMERGENCY_STATUSES = ['declared', 'categorized', 'resolved'] as const;

const metadataInput = z
  .record(z.string(), z.unknown())
  // Depth first, and the size only of what passed it: serializing is recursive, so a hostile depth
  // must be refused before anything walks the value that way.
  .check((check) => {
    if (nestsDeeperThan(check.value, MAX_METADATA_DEPTH)) {
      check.issues.push({
        code: 'custom',
        input: check.value,
        message: `must not nest deeper than ${MAX_METADATA_DEPTH} levels`,
        params: { type: 'too_deep' },
      });
    } else if (Buffer.byteLength(JSON.stringify(check.value)) > 16 * 1024) {
      check.issues.push({ code: 'custom', input: check.value, message: 'must be at most 16 KiB once serialized' });
    }
  })
  .describe(`Free-form JSON object, at most 16 KiB serialized and ${MAX_METADATA_DEPTH} levels deep.`);

// Strict: an unknown field is a 422 extra_forbidden, so a misspelt field is never silently dropped.
export const locationSchema = z
  .strictObject({
    latitude: z.number().min(-90).max(90).optional(),
    longitude: z.number().min(-180).max(180).optional(),
    floorId: z.string().max(128).optional(),
  })
  .refine((l) => (l.latitude === undefined) === (l.longitude === undefined), {
    message: 'latitude and longitude go together',
    path: ['longitude'],
  })
  .meta({ id: 'Location' });

const categorySelector = {
  categoryId: z.string().min(1).max(64).optional().describe('Category id from the categories list.'),
  categoryName: z.string().min(1).max(128).optional().describe('Category name (case-insensitive), instead of categoryId.'),
};

export const declareInput = z
  .strictObject({
    externalId: z.string().min(1).max(256).optional().describe('Your own incident id; unique per organization.'),
    ...categorySelector,
    source: z.string().max(128).optional(),
    description: z.string().max(4000).optional(),
    occurredAt: isoTimestampInput.optional().describe('ISO-8601 with a zone; defaults to now.'),
    location: locationSchema.optional(),
    metadata: metadataInput.optional(),
    declaredBy: actorInput.optional().describe('The person declaring; defaults to the API key.'),
    exercise: z
      .boolean()
      .optional()
      .describe(
        'true declares an exercise: a drill, never a real alarm. Every event, device frame, webhook, feed entry and CAP export ' +
          '(status Exercise) carries it; fixed once declared. Default false.',
      ),
  })
  .refine((b) => !(b.categoryId !== undefined && b.categoryName !== undefined), {
    message: 'give categoryId or categoryName, not both',
    path: ['categoryName'],
  })
  .meta({ id: 'DeclareEmergencyRequest' });

export const recategorizeInput = z
  .strictObject(categorySelector)
  .refine((b) => (b.categoryId === undefined) !== (b.categoryName === undefined), {
    message: 'give exactly one of categoryId or categoryName',
    path: ['categoryId'],
  })
  .meta({ id: 'RecategorizeEmergencyRequest' });

export const resolveInput = z
  .strictObject({
    resolutionNote: z.string().max(4000).optional(),
    resolvedAt: isoTimestampInput.optional().describe('ISO-8601 with a zone; defaults to now.'),
    resolvedBy: actorInput.optional().describe('The person resolving; defaults to the API key.'),
    metadata: metadataInput.optional(),
  })
  .meta({ id: 'ResolveEmergencyRequest' });

export const listEmergenciesQuery = z.object({
  status: z.enum(EMERGENCY_STATUSES).optional(),
  categoryId: z.string().max(64).optional(),
  externalId: z.string().min(1).max(256).optional(),
  exercise: z
    .enum(['true', 'false'], { message: 'must be true or false' })
    .transform((v) => v === 'true')
    .optional()
    .describe('true: exercises only; false: real emergencies only; absent: both.'),
  since: isoTimestampInput.optional().describe('occurredAt >= since (ISO-8601).'),
  until: isoTimestampInput.optional().describe('occurredAt < until (ISO-8601).'),
  cursor: cursorParam.optional(),
  limit: limitParam,
});

export const emergencyRecord = z
  .object({
    emergencyId: uuid,
    orgId: uuid,
    status: z.enum(EMERGENCY_STATUSES),
    externalId: z.string().nullable(),
    category: z.object({ id: uuid, name: z.string(), color: z.string(), severity: z.number().int() }),
    source: z.string().nullable(),
    description: z.string().nullable(),
    occurredAt: timestamp,
    createdAt: timestamp,
    resolvedAt: timestamp.nullable(),
    resolvedBy: actorOutput.nullable(),
    declaredBy: actorOutput,
    location: z.object({ latitude: z.number().nullable(), longitude: z.number().nullable(), floorId: z.string().nullable() }).nullable(),
    resolutionNote: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    exercise: z.boolean().describe('An exercise (a drill), not a real alarm: show it as such.'),
  })
  .meta({ id: 'Emergency' });

export const emergencyPage = pageOf(emergencyRecord).meta({ id: 'EmergencyPage' });

export type DeclareInput = z.infer<typeof declareInput>;
export type RecategorizeInput = z.infer<typeof recategorizeInput>;
export type ResolveInput = z.infer<typeof resolveInput>;
export type ListEmergenciesQuery = z.infer<typeof listEmergenciesQuery>;
export type EmergencyRecord = z.infer<typeof emergencyRecord>;
