import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import type { Caller, Permission } from '../domain/access/principal.js';
import { auditLogPage, listAuditLogsQuery } from '../domain/audit/schema.js';
import { listAuditLogs } from '../domain/audit/service.js';
import { categoryPage } from '../domain/categories/schema.js';
import { listCategories } from '../domain/categories/service.js';
import {
  declareInput,
  emergencyPage,
  emergencyRecord,
  listEmergenciesQuery,
  locationSchema,
  recategorizeInput,
  resolveInput,
} from '../domain/emergencies/schema.js';
import { declareEmergency, getEmergency, listEmergencies, recategorizeEmergency, resolveEmergency } from '../domain/emergencies/service.js';
import { emergencyReceiptsSchema, receiptsQuery } from '../domain/devices/receipt-schema.js';
import { emergencyReceipts } from '../domain/devices/receipts.js';
import { listEvents } from '../domain/events/feed.js';
import { eventPage, listEventsQuery } from '../domain/events/schema.js';
import { orgIdParam } from '../domain/shared/schema.js';
import { AppError } from '../errors.js';

/**
 * One tool: a thin adapter over the service its REST twin calls, taking the REST request schema plus the ids REST takes from
 * the path. Unknown arguments are rejected so that a misspelt one is not silently ignored.
 */
export interface ToolDefinition<I extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  description: string;
  permission: Permission;
  input: I;
  output: z.ZodObject;
  annotations: ToolAnnotations;
  run(ctx: AppContext, caller: Caller, args: z.output<I>): Promise<object>;
}

const defineTool = <I extends z.ZodType>(tool: ToolDefinition<I>): ToolDefinition => tool as unknown as ToolDefinition;

const orgId = orgIdParam.describe('Organization id (UUID). The API key must cover it.');
const emergencyId = z.string().min(1).describe('Emergency id (UUID), as returned by create_emergency or list_emergencies.');

const READ: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

const categorySelectorDescriptions = {
  categoryId: declareInput.shape.categoryId.describe('Category id (categoryId from list_categories). Give categoryId or categoryName, not both.'),
  categoryName: declareInput.shape.categoryName.describe('Category name, case-insensitive (e.g. "Fire"), instead of categoryId.'),
};

export const TOOLS: readonly ToolDefinition[] = [
  defineTool({
    name: 'list_categories',
    title: 'List emergency categories',
    description:
      'Lists the categories an emergency can be declared under in the organization (highest severity first). ' +
      'Use a returned categoryId or name with create_emergency / update_emergency. Permission: categories:read.',
    permission: 'categories:read',
    input: z.strictObject({ orgId }),
    output: categoryPage,
    annotations: { ...READ, title: 'List emergency categories' },
    // Organizations have a handful of categories; one page of the REST maximum holds them all.
    run: (ctx, caller, args) => listCategories(ctx, caller, args.orgId, { limit: 200 }),
  }),
  defineTool({
    name: 'list_emergencies',
    title: 'List emergencies',
    description:
      'Lists emergencies of the organization, newest occurredAt first, with optional filters. Pass the returned nextCursor as ' +
      'cursor for the next page (null on the last page). Filter by externalId to find an emergency after an ambiguous write. Permission: emergencies:read.',
    permission: 'emergencies:read',
    input: listEmergenciesQuery
      .omit({ exercise: true })
      .safeExtend({
        orgId,
        status: listEmergenciesQuery.shape.status.describe('Only emergencies in this state: declared, categorized or resolved.'),
        categoryId: listEmergenciesQuery.shape.categoryId.describe('Only emergencies under this category id.'),
        externalId: listEmergenciesQuery.shape.externalId.describe('Only the emergency with this caller-supplied externalId.'),
        since: listEmergenciesQuery.shape.since.describe('Only emergencies with occurredAt at or after this ISO-8601 time (with a zone).'),
        until: listEmergenciesQuery.shape.until.describe('Only emergencies with occurredAt before this ISO-8601 time (with a zone).'),
        exercise: z.boolean().optional().describe('true: only exercises (drills); false: only real emergencies; omitted: both.'),
      })
      .strict(),
    output: emergencyPage,
    annotations: { ...READ, title: 'List emergencies' },
    run: (ctx, caller, { orgId: org, ...query }) => listEmergencies(ctx, caller, org, query),
  }),
  defineTool({
    name: 'get_emergency',
    title: 'Get an emergency',
    description: 'Returns one emergency of the organization with its committed state. Permission: emergencies:read.',
    permission: 'emergencies:read',
    input: z.strictObject({ orgId, emergencyId }),
    output: emergencyRecord,
    annotations: { ...READ, title: 'Get an emergency' },
    run: (ctx, caller, args) => getEmergency(ctx, caller, args.orgId, args.emergencyId),
  }),
  defineTool({
    name: 'list_audit_logs',
    title: 'List audit-log entries',
    description:
      'Lists audit-log entries of the organization, newest first: who declared, re-categorized or resolved what, with the request id. ' +
      'eventType requires eventCategory. Pass nextCursor as cursor for the next page. Permission: audit:read.',
    permission: 'audit:read',
    input: listAuditLogsQuery
      .safeExtend({
        orgId,
        eventCategory: listAuditLogsQuery.shape.eventCategory.describe('Only entries of this category: emergency, message, api_key, webhook or device.'),
        eventType: listAuditLogsQuery.shape.eventType.describe('Only entries of this type, e.g. emergency.declared. Requires eventCategory.'),
        actorId: listAuditLogsQuery.shape.actorId.describe('Only entries made by this actor (an API key id).'),
        since: listAuditLogsQuery.shape.since.describe('Only entries at or after this ISO-8601 time (with a zone).'),
        until: listAuditLogsQuery.shape.until.describe('Only entries before this ISO-8601 time (with a zone).'),
      })
      .strict(),
    output: auditLogPage,
    annotations: { ...READ, title: 'List audit-log entries' },
    run: (ctx, caller, { orgId: org, ...query }) => listAuditLogs(ctx, caller, org, query),
  }),
  defineTool({
    name: 'list_events',
    title: 'List events of the organization',
    description:
      "Lists the organization's event stream (emergency.declared, emergency.categorized, emergency.resolved, and with an " +
      'acknowledgement deadline emergency.delivery_overdue and emergency.delivery_completed) after an offset, oldest first: what base ' +
      'stations and webhook subscribers were sent. Use it to catch up on what happened since the last offset you saw; ' +
      'lastOffset is the newest offset now. Pass nextCursor as cursor while it is non-null. Filter with eventType and emergencyId. Permission: events:read.',
    permission: 'events:read',
    input: listEventsQuery
      .safeExtend({
        orgId,
        after: listEventsQuery.shape.after.describe('Return events after this offset (default 0: from the oldest kept).'),
        eventType: listEventsQuery.shape.eventType.describe('Only these event types, e.g. ["emergency.declared"] or "emergency.declared,emergency.resolved".'),
        emergencyId: listEventsQuery.shape.emergencyId.describe('Only the events of this emergency.'),
      })
      .strict(),
    output: eventPage,
    annotations: { ...READ, title: 'List events of the organization' },
    run: (ctx, caller, { orgId: org, ...query }) => listEvents(ctx, caller, org, query),
  }),
  defineTool({
    name: 'get_emergency_receipts',
    title: 'Who has the alert',
    description:
      'Use get_emergency_receipts to see which base stations have not acknowledged an emergency alert, and how its webhook deliveries ' +
      'stand. For each event of the emergency: devices targeted, acknowledged, and the pending ones (name, online, acknowledged offset); ' +
      'webhook subscriptions targeted, succeeded, failed and pending. Events come in pages (pass nextCursor as cursor while it is ' +
      "non-null); each event lists at most 10 devices, and its devices.nextCursor, passed as deviceCursor, gives that event's next ones. " +
      'Permission: events:read.',
    permission: 'events:read',
    input: receiptsQuery
      .safeExtend({
        orgId,
        emergencyId,
        detail: receiptsQuery.shape.detail.describe('"devices" also lists, per event, the devices that acknowledged it and when.'),
        limit: receiptsQuery.shape.limit.describe('Events per page, 1..100 (default 20); with deviceCursor, devices per page.'),
        cursor: receiptsQuery.shape.cursor.describe('The nextCursor of the previous result, unchanged: the next events.'),
        deviceCursor: receiptsQuery.shape.deviceCursor.describe(
          "An event's devices.nextCursor, unchanged: that event only, with its next devices (cursor is then ignored).",
        ),
      })
      .strict(),
    output: emergencyReceiptsSchema,
    annotations: { ...READ, title: 'Who has the alert' },
    run: (ctx, caller, { orgId: org, emergencyId: id, ...query }) => emergencyReceipts(ctx, caller, org, id, query),
  }),
  defineTool({
    name: 'create_emergency',
    title: 'Declare an emergency',
    description:
      'Declares an emergency: it is real, alerts every base-station device of the organization and notifies webhook subscribers; ' +
      'with exercise: true it is an exercise (a drill), shown everywhere as such and never as a real alarm. ' +
      'Without categoryId/categoryName it lands under Uncategorized. Supply externalId (your incident id) so a retry cannot ' +
      'create a duplicate: a repeated externalId is refused with the existing emergencyId. Returns the Emergency. Permission: emergencies:write.',
    permission: 'emergencies:write',
    input: declareInput
      .safeExtend({
        orgId,
        ...categorySelectorDescriptions,
        source: declareInput.shape.source.describe('Where the alert comes from (e.g. "fire-panel", "agent"), at most 128 characters.'),
        description: declareInput.shape.description.describe('What is happening, at most 4000 characters.'),
        location: locationSchema.optional().describe('Where: latitude and longitude (together), and/or floorId.'),
        metadata: declareInput.shape.metadata.describe('Free-form JSON object kept with the emergency, at most 16 KiB serialized.'),
        exercise: declareInput.shape.exercise.describe('true for an exercise (a drill, announced as such everywhere); default false. Fixed once declared.'),
      })
      .strict(),
    output: emergencyRecord,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true, title: 'Declare an emergency' },
    run: (ctx, caller, { orgId: org, ...input }) => declareEmergency(ctx, caller, org, input),
  }),
  defineTool({
    name: 'update_emergency',
    title: 'Re-categorize an emergency',
    description:
      'Moves an emergency that is not resolved to another category (exactly one of categoryId or categoryName); it becomes ' +
      '"categorized" and emergency.categorized is sent to devices and subscribers. Naming the category it already has while ' +
      'categorized changes nothing. Resolved emergencies cannot be changed. Returns the Emergency. Permission: emergencies:write.',
    permission: 'emergencies:write',
    input: recategorizeInput.safeExtend({ orgId, emergencyId, ...categorySelectorDescriptions }).strict(),
    output: emergencyRecord,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true, title: 'Re-categorize an emergency' },
    run: (ctx, caller, { orgId: org, emergencyId: id, ...input }) => recategorizeEmergency(ctx, caller, org, id, input),
  }),
  defineTool({
    name: 'resolve_emergency',
    title: 'Resolve an emergency',
    description:
      'Resolves an emergency (from declared or categorized); emergency.resolved is sent to devices and subscribers and the ' +
      'emergency becomes immutable. Calling it for an emergency that is already resolved changes nothing and returns an ' +
      'emergency_resolved error (permission_denied to a key without emergencies:read). Returns the resolved Emergency. Permission: emergencies:write.',
    permission: 'emergencies:write',
    input: resolveInput
      .safeExtend({
        orgId,
        emergencyId,
        resolutionNote: resolveInput.shape.resolutionNote.describe('How it ended, at most 4000 characters.'),
        metadata: resolveInput.shape.metadata.describe('Free-form JSON object stored with the resolution, at most 16 KiB serialized.'),
      })
      .strict(),
    output: emergencyRecord,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true, title: 'Resolve an emergency' },
    run: async (ctx, caller, { orgId: org, emergencyId: id, ...input }) => {
      const { emergency, created } = await resolveEmergency(ctx, caller, org, id, input);
      // REST answers a repeat idempotently; an agent is told instead, so it does not believe it resolved it now.
      if (!created) {
        throw new AppError('emergency_resolved', `Emergency ${emergency.emergencyId} was already resolved at ${emergency.resolvedAt}.`, {
          emergencyId: emergency.emergencyId,
        });
      }
      return emergency;
    },
  }),
];
