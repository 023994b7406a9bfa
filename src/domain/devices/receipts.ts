import type { AppContext } from '../../context.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { existingEmergencyId } from '../emergencies/not-found.js';
import { findOrgScope } from '../orgs/scope.js';
import { keysetPage } from '../shared/cursor.js';
import type { Page } from '../shared/schema.js';
import { activeSubscriptionsInTree, subscriptionWants } from '../webhooks/repo.js';
import type { DeviceReceiptItem, EmergencyReceipts, EventReceipt } from './receipt-schema.js';
import { isOnline as online } from './service.js';

/**
 * Who has an alert. A device has acknowledged an event once its acked offset reached the event's
 * offset (acks are cumulative); the time is that of the first ack that covered it, from the ack
 * history. Every answer is a fixed number of indexed statements, whatever the number of devices
 * or events: never one per device or per event.
 */

const DEVICE_COLUMNS = ['id', 'name', 'status', 'created_at', 'connection_id', 'last_seen_at', 'acked_offset', 'acked_at', 'connected_at'] as const;

/** `GET /orgs/{org_id}/devices`: the org's base stations by name then id, with how far behind each is. */
export async function listOrgDevices(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  params: { cursor?: string; limit: number },
): Promise<Page<DeviceReceiptItem>> {
  const org = await authorize(ctx, caller, orgId, 'read');
  const newest = await ctx.db.db.selectFrom('orgs').select('event_offset').where('id', '=', org.id).executeTakeFirstOrThrow();
  const lastOffset = Number(newest.event_offset);
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
  const rows = await ctx.db.db
    .selectFrom('webhook_deliveries')
    .select(['event_id', 'status', (eb) => eb.fn.countAll().as('n')])
    .where(
      'event_id',
      'in',
      events.map((e) => e.id),
    )
    .groupBy(['event_id', 'status'])
    .execute();
  for (const row of rows) {
    const c = counts.get(row.event_id)!;
    const n = Number(row.n);
    c.targeted += n;
    if (row.status === 'delivered') c.succeeded += n;
    else if (row.status === 'failed') c.failed += n;
    else c.pending += n;
  }
  const cursor = await ctx.db.db.selectFrom('webhook_cursors').select('last_offset').where('org_id', '=', orgId).executeTakeFirst();
  const fannedOutTo = cursor ? Number(cursor.last_offset) : 0;
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

/** When each device first acknowledged each event of the emergency, in one statement (one index seek per pair). */
async function acknowledgedTimes(ctx: AppContext, orgId: string, emergencyId: string): Promise<Map<string, string | null>> {
  // A cross join keeps the emergency's few events as the outer loop on SQLite (its planner would
  // otherwise start from the devices and scan the org's events for each); PostgreSQL plans it alike.
  const rows = await ctx.db.db
    .selectFrom('events as e')
    .crossJoin('devices as d')
    .whereRef('d.org_id', '=', 'e.org_id')
    .whereRef('d.acked_offset', '>=', 'e.stream_offset')
    .whereRef('d.created_at', '<=', 'e.created_at')
    .select((eb) => [
      'e.id as event_id',
      'd.id as device_id',
      eb
        .selectFrom('device_acks as a')
        .select('a.acked_at')
        .whereRef('a.device_id', '=', 'd.id')
        .whereRef('a.to_offset', '>=', 'e.stream_offset')
        .orderBy('a.to_offset')
        .limit(1)
        .as('acked_at'),
    ])
    .where('e.org_id', '=', orgId)
    .where('e.emergency_id', '=', emergencyId)
    .where('d.status', '=', 'active')
    .execute();
  const times = new Map<string, string | null>();
  for (const r of rows) times.set(`${r.event_id} ${r.device_id}`, r.acked_at ?? null);
  return times;
}

/**
 * `GET /orgs/{org_id}/emergencies/{emergency_id}/receipts`: per event of the emergency, which active
 * devices it targeted (those that existed when it was created), which have acknowledged it, and how
 * its webhook deliveries stand. A revoked device is not counted from its revocation on.
 */
export async function emergencyReceipts(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  emergencyId: string,
  options: { detail?: 'devices' } = {},
): Promise<EmergencyReceipts> {
  const org = await authorize(ctx, caller, orgId, 'read');
  const id = await existingEmergencyId(ctx.db.db, org.id, emergencyId);
  const events: EventRow[] = await ctx.db.db
    .selectFrom('events')
    .select(['id', 'stream_offset', 'event_type', 'sequence', 'created_at'])
    .where('org_id', '=', org.id)
    .where('emergency_id', '=', id)
    .orderBy('sequence')
    .execute();
  const devices = await ctx.db.db
    .selectFrom('devices')
    .select(DEVICE_COLUMNS)
    .where('org_id', '=', org.id)
    .where('status', '=', 'active')
    .orderBy('name')
    .orderBy('id')
    .execute();
  const webhooks = await webhookReceipts(ctx, org.id, events);
  const times = options.detail === 'devices' ? await acknowledgedTimes(ctx, org.id, id) : null;
  const now = Date.now();
  return {
    emergencyId: id,
    events: events.map((e) => {
      const offset = Number(e.stream_offset);
      const targeted = devices.filter((d) => d.created_at <= e.created_at);
      const acked = targeted.filter((d) => Number(d.acked_offset) >= offset);
      const receipt: EventReceipt = {
        eventId: e.id,
        eventType: e.event_type,
        sequence: Number(e.sequence),
        offset,
        createdAt: e.created_at,
        devices: {
          targeted: targeted.length,
          acknowledged: acked.length,
          pending: targeted
            .filter((d) => Number(d.acked_offset) < offset)
            .map((d) => ({ deviceId: d.id, name: d.name, online: online(d, now), ackedOffset: Number(d.acked_offset) })),
        },
        webhooks: webhooks.get(e.id)!,
      };
      if (times) {
        receipt.devices.acknowledgedBy = acked.map((d) => ({ deviceId: d.id, name: d.name, acknowledgedAt: times.get(`${e.id} ${d.id}`) ?? null }));
      }
      return receipt;
    }),
  };
}
