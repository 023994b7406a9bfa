import type { AppContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { existingEmergencyId } from '../emergencies/not-found.js';
import { CURSOR_SHAPES, decodeCursor, encodeCursor } from '../shared/cursor.js';
import { textsThatFit } from '../shared/page-bytes.js';
import { isUuid } from '../shared/ids.js';
import type { EmergencyEventsQuery, ListEventsQuery } from './schema.js';

/**
 * The org's event stream as pages. Items embed the stored envelope text as is, so `event` is byte
 * for byte the body a webhook subscriber receives and the `event` of a device frame.
 */

interface StoredItem {
  stream_offset: number;
  payload: string;
}

/** `{"offset":N,"event":}` around each envelope, N at most 10 digits. */
const ITEM_WRAPPING_BYTES = 32;

function pageJson(rows: StoredItem[], limit: number, cursorOf: (row: StoredItem) => (string | number)[], lastOffset?: number): string {
  const hasMore = rows.length > limit;
  const fetched = hasMore ? rows.slice(0, limit) : rows;
  // A page also ends at PAGE_BYTES of items (extensions.md §9: no answer past 1 MiB).
  const payloads = fetched.map((r) => r.payload);
  const page = fetched.slice(0, textsThatFit(payloads, ITEM_WRAPPING_BYTES));
  const items = page.map((r) => `{"offset":${Number(r.stream_offset)},"event":${r.payload}}`).join(',');
  const nextCursor = hasMore || page.length < fetched.length ? JSON.stringify(encodeCursor(cursorOf(page[page.length - 1]!))) : 'null';
  return `{"items":[${items}],"nextCursor":${nextCursor}${lastOffset === undefined ? '' : `,"lastOffset":${lastOffset}`}}`;
}

/** Newest and highest removed offsets of an org's stream. */
async function streamBounds(ctx: AppContext, orgId: string): Promise<{ lastOffset: number; prunedOffset: number }> {
  const row = await ctx.db.db.selectFrom('orgs').select(['event_offset', 'pruned_offset']).where('id', '=', orgId).executeTakeFirstOrThrow();
  return { lastOffset: Number(row.event_offset), prunedOffset: Number(row.pruned_offset) };
}

/**
 * `GET /orgs/{org_id}/events`: committed events after an offset, oldest first, as the response's
 * JSON text. `after` 0 (the default) starts at the oldest retained event; a later `after` whose
 * successors were removed by retention is a 410 `events_expired` naming the oldest offset still kept.
 */
export async function listEventsJson(ctx: AppContext, caller: Caller, orgId: string, params: ListEventsQuery): Promise<string> {
  const org = await authorize(ctx, caller, orgId, 'read');
  const after = params.cursor ? decodeCursor(params.cursor, CURSOR_SHAPES.streamOffset)[0] : params.after;
  let query = ctx.db.db.selectFrom('events').select(['stream_offset', 'payload']).where('org_id', '=', org.id).where('stream_offset', '>', after);
  if (params.eventType) query = query.where('event_type', 'in', params.eventType);
  if (params.emergencyId !== undefined) {
    // An id that cannot name an emergency matches nothing (as a filter, not a 404).
    query = query.where('emergency_id', '=', isUuid(params.emergencyId) ? params.emergencyId.toLowerCase() : '');
  }
  const rows = await query
    .orderBy('stream_offset')
    .limit(params.limit + 1)
    .execute();
  // Read after the rows: a prune that ran meanwhile is then seen, and lastOffset covers every row returned.
  const { lastOffset, prunedOffset } = await streamBounds(ctx, org.id);
  if (after > 0 && after < prunedOffset) {
    throw new AppError('events_expired', `Events after offset ${after} are past the retention; the oldest offset still kept is ${prunedOffset + 1}.`, {
      oldestOffset: prunedOffset + 1,
    });
  }
  return pageJson(rows, params.limit, (r) => [Number(r.stream_offset)], lastOffset);
}

/** `GET /orgs/{org_id}/emergencies/{emergency_id}/events`: the emergency's timeline, in sequence order. */
export async function listEmergencyEventsJson(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  emergencyId: string,
  params: EmergencyEventsQuery,
): Promise<string> {
  const org = await authorize(ctx, caller, orgId, 'read');
  const id = await existingEmergencyId(ctx.db.db, org.id, emergencyId);
  let query = ctx.db.db.selectFrom('events').select(['stream_offset', 'payload', 'sequence']).where('org_id', '=', org.id).where('emergency_id', '=', id);
  if (params.cursor) query = query.where('sequence', '>', decodeCursor(params.cursor, CURSOR_SHAPES.sequence)[0]);
  const rows = await query
    .orderBy('sequence')
    .limit(params.limit + 1)
    .execute();
  const { lastOffset } = await streamBounds(ctx, org.id);
  return pageJson(rows, params.limit, (r) => [Number((r as StoredItem & { sequence: number }).sequence)], lastOffset);
}

export async function listEvents(ctx: AppContext, caller: Caller, orgId: string, params: ListEventsQuery): Promise<object> {
  return JSON.parse(await listEventsJson(ctx, caller, orgId, params)) as object;
}

/**
 * Where a live stream of the org's events starts: after `after` when given (a resume; 410 when its
 * successors are past the retention), else after the newest offset (only what happens from now on).
 * An offset beyond the newest (e.g. kept across a database restore) starts at the newest.
 */
export async function streamStart(ctx: AppContext, caller: Caller, orgId: string, after: number | undefined): Promise<{ orgId: string; after: number }> {
  const org = await authorize(ctx, caller, orgId, 'read');
  const { lastOffset, prunedOffset } = await streamBounds(ctx, org.id);
  if (after === undefined) return { orgId: org.id, after: lastOffset };
  if (after > 0 && after < prunedOffset) {
    throw new AppError('events_expired', `Events after offset ${after} are past the retention; the oldest offset still kept is ${prunedOffset + 1}.`, {
      oldestOffset: prunedOffset + 1,
    });
  }
  return { orgId: org.id, after: Math.min(after, lastOffset) };
}
