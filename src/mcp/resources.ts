import { ErrorCode, McpError, type Resource, type ResourceTemplate } from '@modelcontextprotocol/sdk/types.js';
import type { AppContext } from '../context.js';
import { requirePermission } from '../domain/access/authorize.js';
import type { Caller, Permission } from '../domain/access/principal.js';
import { listCategories } from '../domain/categories/service.js';
import type { EmergencyRecord } from '../domain/emergencies/schema.js';
import { getEmergencyJson, listEmergencies } from '../domain/emergencies/service.js';
import { listEmergencyEventsJson } from '../domain/events/feed.js';
import { listCoveredOrgs } from '../domain/orgs/covered.js';
import { isUuid } from '../domain/shared/ids.js';
import { AppError } from '../errors.js';

/**
 * The tool server's resources (extensions §10): each emergency as `emergency://{orgId}/{emergencyId}` (its record, as GET
 * emergency answers it) and its timeline as `emergency://{orgId}/{emergencyId}/timeline` (its events, as the REST timeline
 * answers them), read through the services their REST twins call, with the same scoping and permissions.
 */
export const EMERGENCY_TEMPLATE = 'emergency://{orgId}/{emergencyId}';
export const TIMELINE_TEMPLATE = 'emergency://{orgId}/{emergencyId}/timeline';

export const RESOURCE_TEMPLATES: ResourceTemplate[] = [
  {
    uriTemplate: EMERGENCY_TEMPLATE,
    name: 'emergency',
    title: 'Emergency',
    description: 'One emergency of an organization the key covers, as JSON: its committed state (permission: emergencies:read).',
    mimeType: 'application/json',
  },
  {
    uriTemplate: TIMELINE_TEMPLATE,
    name: 'emergency-timeline',
    title: 'Emergency timeline',
    description: "One emergency's events in sequence order, as JSON: the first 500 (permission: events:read).",
    mimeType: 'application/json',
  },
];

/** What a resource URI names. */
export interface EmergencyUri {
  orgId: string;
  emergencyId: string;
  timeline: boolean;
  /** The permission reading it takes. */
  permission: Permission;
}

const URI = /^emergency:\/\/([^/]+)\/([^/]+)(\/timeline)?$/i;

export function emergencyUri(orgId: string, emergencyId: string, timeline = false): string {
  return `emergency://${orgId}/${emergencyId}${timeline ? '/timeline' : ''}`;
}

/** Parses a resource URI of this server; an unknown one is the protocol's "resource not found". */
export function parseEmergencyUri(uri: string): EmergencyUri {
  const match = URI.exec(uri);
  if (!match || !isUuid(match[1]!) || !isUuid(match[2]!)) throw resourceNotFound(uri);
  const timeline = match[3] !== undefined;
  return { orgId: match[1]!.toLowerCase(), emergencyId: match[2]!.toLowerCase(), timeline, permission: timeline ? 'events:read' : 'emergencies:read' };
}

function resourceNotFound(uri: string): McpError {
  // -32002 is the specification's code for a resource that does not exist.
  return new McpError(-32002, `Resource not found: ${uri.slice(0, 200)}. Resources are ${EMERGENCY_TEMPLATE} and ${TIMELINE_TEMPLATE}.`, { uri });
}

/** An AppError of a resource read as a JSON-RPC error: not found (and not covered, which must look alike) as -32002. */
export function resourceError(err: unknown, uri: string): unknown {
  if (!(err instanceof AppError)) return err;
  if (err.code === 'emergency_not_found' || err.code === 'org_not_covered') return resourceNotFound(uri);
  return new McpError(ErrorCode.InvalidParams, err.message, { status: err.status, error: err.code });
}

/** `resources/read`: the record or the timeline, as their REST twins answer them. */
export async function readEmergencyResource(
  ctx: AppContext,
  caller: Caller,
  uri: string,
): Promise<{ contents: { uri: string; mimeType: string; text: string }[] }> {
  const target = parseEmergencyUri(uri);
  try {
    const text = target.timeline
      ? await listEmergencyEventsJson(ctx, caller, target.orgId, target.emergencyId, { limit: 500 })
      : await getEmergencyJson(ctx, caller, target.orgId, target.emergencyId);
    return { contents: [{ uri, mimeType: 'application/json', text }] };
  } catch (err) {
    throw resourceError(err, uri);
  }
}

/** Checks that `caller` may read `uri` now (it exists, is covered, and the permission is held): a subscription's admission. */
export async function checkReadable(ctx: AppContext, caller: Caller, uri: string): Promise<EmergencyUri> {
  const target = parseEmergencyUri(uri);
  try {
    requirePermission(caller, target.permission, `to read ${uri}`);
    await getEmergencyJson(ctx, caller, target.orgId, target.emergencyId);
  } catch (err) {
    throw resourceError(err, uri);
  }
  return target;
}

/** Where `resources/list` stands: an org page of the key's orgs, an org in it, and an emergency page of that org. */
interface ListPosition {
  orgs?: string;
  at: number;
  emergencies?: string;
}

const ORGS_PER_PAGE = 50;
const EMERGENCIES_PER_PAGE = 50;
/** Pages read for one answer at most: a page may be short or empty, the cursor goes on. */
const READS_PER_ANSWER = 8;

function encodePosition(p: ListPosition): string {
  return Buffer.from(JSON.stringify(p)).toString('base64url');
}

function decodePosition(cursor: string | undefined): ListPosition {
  if (cursor === undefined) return { at: 0 };
  try {
    const p = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as ListPosition;
    const optionalString = (v: unknown) => v === undefined || (typeof v === 'string' && v.length <= 1024);
    if (Number.isInteger(p.at) && p.at >= 0 && p.at < ORGS_PER_PAGE && optionalString(p.orgs) && optionalString(p.emergencies)) return p;
  } catch {
    // falls through to the error below
  }
  throw new McpError(ErrorCode.InvalidParams, 'Invalid cursor: pass nextCursor from the previous resources/list answer unchanged.');
}

const isOpen = (e: EmergencyRecord) => e.status !== 'resolved';

function resourceOf(e: EmergencyRecord, orgName: string): Resource {
  const what = e.category.name;
  return {
    uri: emergencyUri(e.orgId, e.emergencyId),
    name: `${what}: ${e.description ?? e.emergencyId}`.slice(0, 200),
    title: `${what} (${e.status}) in ${orgName}`,
    description: `Open emergency of ${orgName}, occurred ${e.occurredAt}; its timeline is ${emergencyUri(e.orgId, e.emergencyId, true)}.`,
    mimeType: 'application/json',
  };
}

/**
 * `resources/list`: the open emergencies of the organizations the key covers, org by org (by name), newest first, paged by
 * an opaque cursor. A key without emergencies:read lists nothing.
 */
export async function listEmergencyResources(
  ctx: AppContext,
  caller: Caller,
  cursor: string | undefined,
): Promise<{ resources: Resource[]; nextCursor?: string }> {
  const position = decodePosition(cursor);
  const principal = caller.principal;
  if (principal.kind === 'api_key' && !principal.permissions.has('emergencies:read')) return { resources: [] };
  for (let reads = 0; reads < READS_PER_ANSWER; reads++) {
    const orgs = await listCoveredOrgs(ctx, caller, { cursor: position.orgs, limit: ORGS_PER_PAGE });
    const org = orgs.items[position.at];
    if (!org) {
      if (!orgs.nextCursor) return { resources: [] };
      Object.assign(position, { orgs: orgs.nextCursor, at: 0, emergencies: undefined });
      continue;
    }
    const page = await listEmergencies(ctx, caller, org.orgId, { cursor: position.emergencies, limit: EMERGENCIES_PER_PAGE });
    const resources = page.items.filter(isOpen).map((e) => resourceOf(e, org.name));
    if (page.nextCursor) position.emergencies = page.nextCursor;
    else if (position.at + 1 < orgs.items.length) Object.assign(position, { at: position.at + 1, emergencies: undefined });
    else if (orgs.nextCursor) Object.assign(position, { orgs: orgs.nextCursor, at: 0, emergencies: undefined });
    else return { resources };
    if (resources.length > 0 || reads === READS_PER_ANSWER - 1) return { resources, nextCursor: encodePosition(position) };
  }
  return { resources: [], nextCursor: encodePosition(position) };
}

const COMPLETIONS = 100;

/** `completion/complete` for an emergency template's arguments: org ids the key covers, then the open emergencies of the org. */
export async function completeTemplateArgument(
  ctx: AppContext,
  caller: Caller,
  argument: { name: string; value: string },
  context: Record<string, string> | undefined,
): Promise<string[]> {
  const prefix = argument.value.toLowerCase();
  if (argument.name === 'orgId') {
    const orgs = await listCoveredOrgs(ctx, caller, { limit: 200 });
    return orgs.items.map((o) => o.orgId).filter((id) => id.startsWith(prefix));
  }
  if (argument.name === 'emergencyId' && context?.orgId) {
    const page = await listEmergencies(ctx, caller, context.orgId, { limit: 200 });
    return page.items
      .filter(isOpen)
      .map((e) => e.emergencyId)
      .filter((id) => id.startsWith(prefix));
  }
  return [];
}

/** Category names of the org that start with the value (case-insensitive), for the declare prompt. */
export async function completeCategoryName(ctx: AppContext, caller: Caller, value: string, orgId: string | undefined): Promise<string[]> {
  if (!orgId) return [];
  const page = await listCategories(ctx, caller, orgId, { limit: 200 });
  const prefix = value.toLowerCase();
  return page.items.map((c) => c.name).filter((name) => name.toLowerCase().startsWith(prefix));
}

/** At most COMPLETIONS values, with the total and whether more matched, as the protocol's answer. */
export function completionOf(values: string[]): { completion: { values: string[]; total: number; hasMore: boolean } } {
  return { completion: { values: values.slice(0, COMPLETIONS), total: values.length, hasMore: values.length > COMPLETIONS } };
}
