import type { AppContext } from '../../context.js';
import { FieldValidationError, fieldError } from '../../errors.js';
import { cursorOffset } from '../../log/cursors.js';
import { committedOffset, emergencyEvents } from '../../log/reads.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { deadlinesOfEvents } from '../deadlines/repo.js';
import { existingEmergencyId } from '../emergencies/not-found.js';
import { findOrgScope } from '../orgs/scope.js';
import { CURSOR_SHAPES, decodeCursor, encodeCursor, keysetPage } from '../shared/cursor.js';
import { itemsThatFit } from '../shared/page-bytes.js';
import { CURSOR_INVALID_MESSAGE, type Page } from '../shared/schema.js';
import { deliveryStatusCounts } from '../webhooks/queue.js';
import { activeSubscriptionsInTree, subscriptionWants } from '../webhooks/repo.js';
import { DEVICES_PER_EVENT, type DeviceReceiptItem, type EmergencyReceipts, type EventReceipt, type ReceiptsQuery } from './receipt-schema.js';
import { firstAckTimes } from './repo.js';
import { isOnline as online } from './service.js';
import { activeDevicesOf, DEVICE_COLUMNS, type DeviceRow, hasAcknowledged, targets } from './targeting.js';

/**
 * Who has an alert. A device has acknowledged an event once its acked offset reached the event's
 * offset (acks are cumulative); the time is that of the first ack that covered it, from the ack
 * history. Every answer is a few indexed statements, whatever the number of devices or events:
 * never one per device or per event. Answers are pages (extensions.md §9: at most 1 MiB).
 */

/** `GET /orgs/{org_id}/devices`: the org's base stations by name then id, with how far behind each is. */
export async function listOrgDevices(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  params: { cursor?: string; limit: number },
): Promise<Page<DeviceReceiptItem>> {
  const org = await authorize(ctx, caller, orgId, 'events:read');
  const lastOffset = await committedOffset(ctx.db.db, org.id);
  const now = Date.now();
  const query = ctx.db.db.selectFrom('devices').select(DEVICE_COLUMNS).where('org_id', '=', org.id);
  return keysetPage(query, { sort: 'name', keyOf: (row) => [row.name, row.id] }, params, (row) => ({
    deviceId: row.id,
    name: row.name,
    status: row.status === 'revoked' ? ('revoked' as const) : ('active' as const),
    online: online(row, now),
    connectedAt: row.connected_at,
    lastSeenAt: row.last_seen_at,
    ackedOffset: Number(row.acked_offset),
    ackedAt: row.acked_at,
    lag: Math.max(0, lastOffset - Number(row.acked_offset)),
  }));
}

interface EventRow {
  id: string;
  stream_offset: number;
  event_type: string;
  sequence: number;
  created_at: string;
}

/** Delivery counts per event: the deliveries made, plus the subscriptions that will get one once fan-out reaches the event. */
async function webhookReceipts(ctx: AppContext, orgId: string, events: EventRow[]): Promise<Map<string, EventReceipt['webhooks']>> {
  const counts = new Map<string, EventReceipt['webhooks']>();
  for (const e of events) counts.set(e.id, { targeted: 0, succeeded: 0, failed: 0, pending: 0 });
  if (events.length === 0) return counts;
  const rows = await deliveryStatusCounts(
    ctx.db.db,
    orgId,
    events.map((e) => e.id),
  );
  for (const row of rows) {
    const c = counts.get(row.event_id)!;
    const n = Number(row.n);
    c.targeted += n;
    if (row.status === 'delivered') c.succeeded += n;
    else if (row.status === 'failed') c.failed += n;
    else c.pending += n;
  }
  const fannedOutTo = await cursorOffset(ctx.db.db, orgId);
  const notYet = events.filter((e) => Number(e.stream_offset) > fannedOutTo);
  if (notYet.length > 0) {
    const scope = await findOrgScope(ctx.db, orgId);
    const subscriptions = scope ? await activeSubscriptionsInTree(ctx.db.db, scope) : [];
    for (const e of notYet) {
      const waiting = subscriptions.filter((s) => subscriptionWants(s, orgId, e.event_type, e.created_at)).length;
      const c = counts.get(e.id)!;
      c.targeted += waiting;
      c.pending += waiting;
    }
  }
  return counts;
}

/**
 * Whether an event's deadline passed with a targeted device silent: settled so by the deadline worker, or due and not yet
 * settled (the worker acts within a second or so) while devices are still silent.
 */
function isOverdue(deadline: { deadline_at: string; state: string }, devices: { targeted: number; acknowledged: number }, now: number): boolean {
  if (deadline.state === 'pending') return Date.parse(deadline.deadline_at) <= now && devices.acknowledged < devices.targeted;
  return deadline.state !== 'met';
}

/** Where a deviceCursor resumes one event's device list: after this (state, name, id). */
interface DevicePosition {
  sequence: number;
  /** 0 while walking the pending devices, 1 the acknowledged ones (listed after them). */
  state: 0 | 1;
  name: string;
  id: string;
}

const DEVICE_CURSOR = ['int4', 'int4', 'text', 'uuid'] as const;

function deviceCursor(sequence: number, state: 0 | 1, device: { name: string; id: string }): string {
  return encodeCursor([sequence, state, device.name, device.id]);
}

/** A deviceCursor's position; anything this endpoint did not hand out is a 422 `cursor_invalid` on `query.deviceCursor`. */
function decodeDeviceCursor(cursor: string): DevicePosition {
  const invalid = () => fieldError(['query', 'deviceCursor'], CURSOR_INVALID_MESSAGE, 'cursor_invalid');
  let values: readonly [number, number, string, string];
  try {
    values = decodeCursor(cursor, DEVICE_CURSOR);
  } catch (err) {
    // The shared decoder names `query.cursor`; this cursor comes in its own parameter.
    if (err instanceof FieldValidationError) throw invalid();
    throw err;
  }
  const [sequence, state, name, id] = values;
  if (sequence < 1 || (state !== 0 && state !== 1)) throw invalid();
  return { sequence, state, name, id };
}

function follows(device: DeviceRow, state: 0 | 1, from: DevicePosition): boolean {
  if (state !== from.state) return state > from.state;
  return device.name > from.name || (device.name === from.name && device.id > from.id);
}

interface DeviceSlice {
  targeted: number;
  acknowledged: number;
  pending: DeviceRow[];
  acknowledgedBy: DeviceRow[];
  nextCursor: string | null;
}

/**
 * One event's counts over all its targeted devices, and a window of at most `take` of them: the
 * pending ones by name, then (with `withAcknowledged`) the acknowledged ones by name, after `from`.
 * `devices` are the org's active devices, sorted by name then id.
 */
function sliceDevices(event: EventRow, devices: DeviceRow[], take: number, withAcknowledged: boolean, from: DevicePosition | null): DeviceSlice {
  let targeted = 0;
  let acknowledged = 0;
  // One more than the window in each list tells whether the event has more devices after it.
  const pending: DeviceRow[] = [];
  const acked: DeviceRow[] = [];
  for (const d of devices) {
    if (!targets(event, d)) continue;
    targeted++;
    const isAcked = hasAcknowledged(d, event);
    if (isAcked) acknowledged++;
    if (isAcked && !withAcknowledged) continue;
    const list = isAcked ? acked : pending;
    if (list.length <= take && (!from || follows(d, isAcked ? 1 : 0, from))) list.push(d);
  }
  const window = pending.slice(0, take);
  const ackedShown = acked.slice(0, take - window.length);
  const more = pending.length + acked.length > take;
  const last = ackedShown.at(-1) ?? window.at(-1);
  return {
    targeted,
    acknowledged,
    pending: window,
    acknowledgedBy: ackedShown,
    nextCursor: more && last ? deviceCursor(Number(event.sequence), ackedShown.length > 0 ? 1 : 0, last) : null,
  };
}

/**
 * `GET /orgs/{org_id}/emergencies/{emergency_id}/receipts`: a page of the emergency's events in
 * sequence order, each with the active devices it targeted (those that existed when it was created),
 * how many acknowledged it, and how its webhook deliveries stand; a revoked device is not counted
 * from its revocation on. Each event lists a window of its devices (the pending ones first); a
 * deviceCursor pages one event's devices. The work of a page is bounded by its events and the org's
 * devices (read once): never by all the events of the emergency times all devices.
 */
export async function emergencyReceipts(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  emergencyId: string,
  params: ReceiptsQuery,
): Promise<EmergencyReceipts> {
  const org = await authorize(ctx, caller, orgId, 'events:read');
  const id = await existingEmergencyId(ctx.db.db, org.id, emergencyId);
  const from = params.deviceCursor === undefined ? null : decodeDeviceCursor(params.deviceCursor);
  const start = from ? { at: from.sequence } : { after: params.cursor ? decodeCursor(params.cursor, CURSOR_SHAPES.sequence)[0] : undefined };
  const rows: EventRow[] = await emergencyEvents(ctx.db.db, org.id, id, start, from ? 1 : params.limit + 1, [
    'id',
    'stream_offset',
    'event_type',
    'sequence',
    'created_at',
  ]);
  const hasMore = !from && rows.length > params.limit;
  const events = hasMore ? rows.slice(0, params.limit) : rows;
  if (events.length === 0) return { emergencyId: id, events: [], nextCursor: null };

  const devices = await activeDevicesOf(ctx.db.db, org.id);
  const withAcknowledged = params.detail === 'devices';
  const take = from ? params.limit : DEVICES_PER_EVENT;
  const slices = events.map((e) => sliceDevices(e, devices, take, withAcknowledged, from));
  const webhooks = await webhookReceipts(ctx, org.id, events);
  const deadlines = await deadlinesOfEvents(
    ctx.db.db,
    org.id,
    events.map((e) => e.id),
  );
  const times = withAcknowledged
    ? await firstAckTimes(
        ctx.db.db,
        org.id,
        events.flatMap((e, i) => slices[i]!.acknowledgedBy.map((d) => ({ eventId: e.id, offset: Number(e.stream_offset), deviceId: d.id }))),
      )
    : null;
  const now = Date.now();
  const receipts = events.map((e, i): EventReceipt => {
    const slice = slices[i]!;
    const deadline = deadlines.get(e.id);
    return {
      eventId: e.id,
      eventType: e.event_type,
      sequence: Number(e.sequence),
      offset: Number(e.stream_offset),
      createdAt: e.created_at,
      deadlineAt: deadline?.deadline_at ?? null,
      overdue: deadline !== undefined && isOverdue(deadline, slice, now),
      devices: {
        targeted: slice.targeted,
        acknowledged: slice.acknowledged,
        pending: slice.pending.map((d) => ({ deviceId: d.id, name: d.name, online: online(d, now), ackedOffset: Number(d.acked_offset) })),
        ...(times && {
          acknowledgedBy: slice.acknowledgedBy.map((d) => ({ deviceId: d.id, name: d.name, acknowledgedAt: times.get(`${e.id} ${d.id}`) ?? null })),
        }),
        nextCursor: slice.nextCursor,
      },
      webhooks: webhooks.get(e.id)!,
    };
  });
  const kept = from ? receipts.length : itemsThatFit(receipts);
  const page = receipts.slice(0, kept);
  const nextCursor = hasMore || kept < receipts.length ? encodeCursor([page.at(-1)!.sequence]) : null;
  return { emergencyId: id, events: page, nextCursor };
}
