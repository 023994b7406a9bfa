import type { AppContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { emergencyEvents, matchingEventsAfter, streamBounds } from '../../log/reads.js';
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

function pageJson<R extends StoredItem>(rows: R[], limit: number, cursorOf: (row: R) => (string | number)[], lastOffset?: number): string {
  const hasMore = rows.length > limit;
  const fetched = hasMore ? rows.slice(0, limit) : rows;
  // A page also ends at PAGE_BYTES of items (extensions.md §9: no answer past 1 MiB).
  const payloads = fetched.map((r) => r.payload);
  const page = fetched.slice(0, textsThatFit(payloads, ITEM_WRAPPING_BYTES));
  const items = page.map((r) => `{"offset":${Number(r.stream_offset)},"event":${r.payload}}`).join(',');
  const nextCursor = hasMore || page.length < fetched.length ? JSON.stringify(encodeCursor(cursorOf(page[page.length - 1]!))) : 'null';
  return `{"items":[${items}],"nextCursor":${nextCursor}${lastOffset === undefined ? '' : `,"lastOffset":${lastOffset}`}}`;
}

/**
 * `GET /orgs/{org_id}/events`: committed events after an offset, oldest first, as the response's
 * JSON text. `after` 0 (the default) starts at the oldest retained event; a later `after` whose
 * successors were removed by retention is a 410 `events_expired` naming the oldest offset still kept.
 */
export async function listEventsJson(ctx: AppContext, caller: Caller, orgId: string, params: ListEventsQuery): Promise<string> {
  const org = await authorize(ctx, caller, orgId, 'events:read');
  const after = params.cursor ? decodeCursor(params.cursor, CURSOR_SHAPES.streamOffset)[0] : params.after;
  const { eventType: types, emergencyId } = params;
  // An id that cannot name an emergency matches nothing (as a filter, not a 404).
  const emergency = emergencyId === undefined ? undefined : isUuid(emergencyId) ? emergencyId.toLowerCase() : '';
  const rows = await matchingEventsAfter(ctx.db.db, org.id, after, { types, emergencyId: emergency }, params.limit + 1);
  // Read after the rows: a prune that ran meanwhile is then seen, and lastOffset covers every row returned.
  const { lastOffset, prunedOffset } = await streamBounds(ctx.db.db, org.id);
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
  const org = await authorize(ctx, caller, orgId, 'events:read');
  const id = await existingEmergencyId(ctx.db.db, org.id, emergencyId);
  const after = params.cursor ? decodeCursor(params.cursor, CURSOR_SHAPES.sequence)[0] : undefined;
  const rows = await emergencyEvents(ctx.db.db, org.id, id, { after }, params.limit + 1, ['stream_offset', 'payload', 'sequence']);
  const { lastOffset } = await streamBounds(ctx.db.db, org.id);
  return pageJson(rows, params.limit, (r) => [Number(r.sequence)], lastOffset);
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
  const org = await authorize(ctx, caller, orgId, 'events:read');
  const { lastOffset, prunedOffset } = await streamBounds(ctx.db.db, org.id);
  if (after === undefined) return { orgId: org.id, after: lastOffset };
  if (after > 0 && after < prunedOffset) {
    throw new AppError('events_expired', `Events after offset ${after} are past the retention; the oldest offset still kept is ${prunedOffset + 1}.`, {
      oldestOffset: prunedOffset + 1,
    });
  }
  return { orgId: org.id, after: Math.min(after, lastOffset) };
}
