import type { Kysely } from 'kysely';
import type { Database, DeviceTable } from '../../db/types.js';

/**
 * Which devices an event targets and which have acknowledged it: the one rule that receipts,
 * acknowledgement deadlines and their re-sends all apply. An event targets the org's active devices
 * that existed when it was created (a revoked device stops counting from its revocation on); a device
 * has acknowledged it once its acked offset reached the event's offset (acks are cumulative).
 */

export const DEVICE_COLUMNS = ['id', 'name', 'status', 'created_at', 'connection_id', 'last_seen_at', 'acked_offset', 'acked_at', 'connected_at'] as const;

export type DeviceRow = Pick<DeviceTable, (typeof DEVICE_COLUMNS)[number]>;

/** An event as the rule needs it. */
export interface TargetingEvent {
  stream_offset: number;
  created_at: string;
}

/** Devices sort by name then id as JavaScript compares strings, the same on both databases. */
export function byNameThenId(a: { name: string; id: string }, b: { name: string; id: string }): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The org's active devices, by name then id: the only devices any event of the org targets. */
export async function activeDevicesOf(db: Kysely<Database>, orgId: string, ids?: readonly string[]): Promise<DeviceRow[]> {
  let query = db.selectFrom('devices').select(DEVICE_COLUMNS).where('org_id', '=', orgId).where('status', '=', 'active');
  if (ids !== undefined) {
    if (ids.length === 0) return [];
    query = query.where('id', 'in', [...ids]);
  }
  return (await query.execute()).sort(byNameThenId);
}

/** Whether the event targets this active device. */
export function targets(event: TargetingEvent, device: Pick<DeviceRow, 'created_at'>): boolean {
  return device.created_at <= event.created_at;
}

export function hasAcknowledged(device: Pick<DeviceRow, 'acked_offset'>, event: TargetingEvent): boolean {
  return Number(device.acked_offset) >= Number(event.stream_offset);
}

export interface Census {
  targeted: number;
  acknowledged: number;
  /** The targeted devices that have not acknowledged, in the order given (by name then id). */
  silent: DeviceRow[];
  /** The targeted devices that have acknowledged. */
  acknowledgedBy: DeviceRow[];
}

/** The event's targeted devices among `devices` (the org's active ones), split by whether they have acknowledged it. */
export function censusOf(event: TargetingEvent, devices: readonly DeviceRow[]): Census {
  const silent: DeviceRow[] = [];
  const acknowledgedBy: DeviceRow[] = [];
  for (const d of devices) {
    if (!targets(event, d)) continue;
    if (hasAcknowledged(d, event)) acknowledgedBy.push(d);
    else silent.push(d);
  }
  return { targeted: silent.length + acknowledgedBy.length, acknowledged: acknowledgedBy.length, silent, acknowledgedBy };
}

/**
 * The queries below apply the same rule in the database, so that an org's devices are counted, not
 * loaded: what a deadline costs stays bounded whatever the org's number of base stations.
 */
function targetedBy(db: Kysely<Database>, orgId: string, event: TargetingEvent, inNameOrder = false) {
  const base = db.selectFrom('devices').where('org_id', '=', orgId).where('status', '=', 'active');
  // In name order, the creation time is compared as an expression: the planner then walks the name index and stops at the
  // limit, instead of reading every device the event targets through the creation-time index and sorting them all.
  return inNameOrder ? base.where((eb) => eb(eb('created_at', '||', ''), '<=', event.created_at)) : base.where('created_at', '<=', event.created_at);
}

/** How many active devices the event targets, and how many of them have acknowledged it. */
export async function censusCounts(db: Kysely<Database>, orgId: string, event: TargetingEvent): Promise<{ targeted: number; acknowledged: number }> {
  const row = await targetedBy(db, orgId, event)
    .select((eb) => [
      eb.fn.countAll<number>().as('targeted'),
      eb.fn.sum<number>(eb.case().when('acked_offset', '>=', Number(event.stream_offset)).then(1).else(0).end()).as('acknowledged'),
    ])
    .executeTakeFirst();
  return { targeted: Number(row?.targeted ?? 0), acknowledged: Number(row?.acknowledged ?? 0) };
}

/** At most `limit` of the targeted devices that have not acknowledged the event, by name then id. */
export async function silentDevicesOf(db: Kysely<Database>, orgId: string, event: TargetingEvent, limit: number): Promise<DeviceRow[]> {
  const rows = await targetedBy(db, orgId, event, true)
    .select(DEVICE_COLUMNS)
    .where('acked_offset', '<', Number(event.stream_offset))
    .orderBy('name')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.sort(byNameThenId);
}

/** The ids of the targeted devices that have acknowledged the event: a drill's report times each one's acknowledgement. */
export async function acknowledgedDeviceIds(db: Kysely<Database>, orgId: string, event: TargetingEvent): Promise<string[]> {
  const rows = await targetedBy(db, orgId, event).select('id').where('acked_offset', '>=', Number(event.stream_offset)).execute();
  return rows.map((r) => r.id);
}

/** Whether some targeted device has not acknowledged the event: one row read at most. */
export async function anySilent(db: Kysely<Database>, orgId: string, event: TargetingEvent): Promise<boolean> {
  const row = await targetedBy(db, orgId, event).select('id').where('acked_offset', '<', Number(event.stream_offset)).limit(1).executeTakeFirst();
  return row !== undefined;
}
