import type { Kysely } from 'kysely';
import { type DbHandle, inTransaction } from '../../db/connect.js';
import type { Database, DeviceTable } from '../../db/types.js';
import { markOverdueForCheck } from '../deadlines/repo.js';

/** SQL for devices only. Presence and ack writes come from the gateway, outside any service transaction. */

const CHUNK = 500;

export function findDeviceByPrefix(db: Kysely<Database>, prefix: string): Promise<DeviceTable | undefined> {
  return db.selectFrom('devices').selectAll().where('token_prefix', '=', prefix).executeTakeFirst();
}

export async function markConnected(db: Kysely<Database>, device: { id: string; orgId: string }, connectionId: string, at: string): Promise<void> {
  await db
    .updateTable('devices')
    .set({ connection_id: connectionId, connected_at: at, last_seen_at: at })
    .where('id', '=', device.id)
    .where('org_id', '=', device.orgId)
    .execute();
}

/** Only clears the connection it owns: a newer connection (maybe on another instance) keeps the device online. */
export async function markDisconnected(
  db: Kysely<Database>,
  device: { id: string; orgId: string },
  connectionId: string,
  lastSeenAt: string,
  at: string,
): Promise<void> {
  await db
    .updateTable('devices')
    .set({ connection_id: null, disconnected_at: at, last_seen_at: lastSeenAt })
    .where('id', '=', device.id)
    .where('org_id', '=', device.orgId)
    .where('connection_id', '=', connectionId)
    .execute();
}

export interface PresenceUpdate {
  deviceId: string;
  orgId: string;
  lastSeenAt: string;
}

/** Refreshes last_seen_at of connected devices, grouped so that a whole fleet costs a handful of statements. */
export async function touchLastSeen(db: Kysely<Database>, updates: PresenceUpdate[]): Promise<void> {
  // Devices of one org heard in the same sweep share one timestamp, so group by both.
  const groups = new Map<string, { orgId: string; at: string; ids: string[] }>();
  for (const u of updates) {
    const key = `${u.orgId} ${u.lastSeenAt}`;
    let group = groups.get(key);
    if (!group) {
      group = { orgId: u.orgId, at: u.lastSeenAt, ids: [] };
      groups.set(key, group);
    }
    group.ids.push(u.deviceId);
  }
  for (const { orgId, at, ids } of groups.values()) {
    for (let i = 0; i < ids.length; i += CHUNK) {
      await db
        .updateTable('devices')
        .set({ last_seen_at: at })
        .where('org_id', '=', orgId)
        .where('id', 'in', ids.slice(i, i + CHUNK))
        .where('connection_id', 'is not', null)
        .execute();
    }
  }
}

export interface AckUpdate {
  deviceId: string;
  orgId: string;
  offset: number;
  at: string;
}

/**
 * Acknowledged offsets only move forward; each advance is also a row of the ack history (the receipts' first covering ack).
 * The gateway coalesces a device's acks per flush, so the history grows by at most one row per device per flush.
 */
export async function recordAcks(handle: DbHandle, acks: AckUpdate[]): Promise<void> {
  if (acks.length === 0) return;
  // Acks of one flush mostly share their org, offset and arrival time: one statement per such group, not per device.
  const groups = new Map<string, { orgId: string; offset: number; at: string; deviceIds: string[] }>();
  for (const ack of acks) {
    const key = `${ack.orgId}\u0000${ack.offset}\u0000${ack.at}`;
    const group = groups.get(key);
    if (group) group.deviceIds.push(ack.deviceId);
    else groups.set(key, { orgId: ack.orgId, offset: ack.offset, at: ack.at, deviceIds: [ack.deviceId] });
  }
  await inTransaction(handle, async (tx) => {
    const history: { device_id: string; org_id: string; to_offset: number; acked_at: string }[] = [];
    for (const { orgId, offset, at, deviceIds } of groups.values()) {
      for (let i = 0; i < deviceIds.length; i += CHUNK) {
        const ids = deviceIds.slice(i, i + CHUNK);
        // Where the devices stood before: only overdue events between there and the new offset can be completed by this ack.
        const before = await tx.db
          .selectFrom('devices')
          .select(['id', 'acked_offset'])
          .where('org_id', '=', orgId)
          .where('id', 'in', ids)
          .where('acked_offset', '<', offset)
          .execute();
        if (before.length === 0) continue;
        const advanced = await tx.db
          .updateTable('devices')
          .set({ acked_offset: offset, acked_at: at })
          .where('org_id', '=', orgId)
          .where(
            'id',
            'in',
            before.map((d) => d.id),
          )
          .where('acked_offset', '<', offset)
          .returning('id')
          .execute();
        for (const row of advanced) history.push({ device_id: row.id, org_id: orgId, to_offset: offset, acked_at: at });
        if (advanced.length > 0) await markOverdueForCheck(tx, orgId, Math.min(...before.map((d) => Number(d.acked_offset))), offset, at);
      }
    }
    for (let i = 0; i < history.length; i += CHUNK) {
      await tx.db
        .insertInto('device_acks')
        .values(history.slice(i, i + CHUNK))
        .onConflict((oc) => oc.columns(['device_id', 'to_offset']).doNothing())
        .execute();
    }
  });
}

/** Devices of these orgs revoked since `since`: the gateway closes their open sockets. */
export async function revokedSince(db: Kysely<Database>, orgIds: string[], since: string): Promise<{ id: string; org_id: string }[]> {
  const found: { id: string; org_id: string }[] = [];
  for (let i = 0; i < orgIds.length; i += CHUNK) {
    found.push(
      ...(await db
        .selectFrom('devices')
        .select(['id', 'org_id'])
        .where('org_id', 'in', orgIds.slice(i, i + CHUNK))
        .where('revoked_at', '>=', since)
        .execute()),
    );
  }
  return found;
}

/** One (event, device) pair of a receipts page, with the event's offset. */
export interface AckPair {
  eventId: string;
  deviceId: string;
  offset: number;
}

/**
 * Pairs per statement: their rows are one compound select, and SQLite allows 500 terms in one.
 */
const ACK_PAIRS_PER_STATEMENT = 250;

/**
 * When each device first acknowledged its event: the time of its ack history's first row that
 * covered the event's offset, one index seek per pair (on device_id, to_offset); null when none did.
 * Only the pairs given are read, never every device of every event.
 */
export async function firstAckTimes(db: Kysely<Database>, orgId: string, pairs: AckPair[]): Promise<Map<string, string | null>> {
  const times = new Map<string, string | null>();
  for (let i = 0; i < pairs.length; i += ACK_PAIRS_PER_STATEMENT) {
    // The pairs as rows (typed, so PostgreSQL knows what the parameters hold), then one seek each.
    const rows = pairs
      .slice(i, i + ACK_PAIRS_PER_STATEMENT)
      .map((p) =>
        db.selectNoFrom((eb) => [
          eb.cast<string>(eb.val(p.eventId), 'text').as('event_id'),
          eb.cast<string>(eb.val(p.deviceId), 'text').as('device_id'),
          eb.cast<number>(eb.val(p.offset), 'integer').as('event_offset'),
        ]),
      )
      .reduce((all, row) => all.unionAll(row));
    const found = await db
      .selectFrom(rows.as('p'))
      .select((eb) => [
        'p.event_id',
        'p.device_id',
        eb
          .selectFrom('device_acks as a')
          .select('a.acked_at')
          .whereRef('a.device_id', '=', 'p.device_id')
          .whereRef('a.to_offset', '>=', 'p.event_offset')
          .where('a.org_id', '=', orgId)
          .orderBy('a.to_offset')
          .limit(1)
          .as('acked_at'),
      ])
      .execute();
    for (const r of found) times.set(`${r.event_id} ${r.device_id}`, r.acked_at ?? null);
  }
  return times;
}

/**
 * When the last of the devices `event` targets first acknowledged it (each one's first ack history row covering its
 * offset, the latest of those); null when none has. One statement over the org's active devices created by then: the
 * deadline worker never loads the device list to measure it.
 */
export async function lastFirstAckOfTargeted(
  db: Kysely<Database>,
  orgId: string,
  event: { stream_offset: number; created_at: string },
): Promise<string | null> {
  const firsts = db
    .selectFrom('device_acks as a')
    .innerJoin('devices as d', 'd.id', 'a.device_id')
    .select((eb) => eb.fn.min('a.acked_at').as('first_at'))
    .where('a.org_id', '=', orgId)
    .where('d.org_id', '=', orgId)
    .where('d.status', '=', 'active')
    .where('d.created_at', '<=', event.created_at)
    .where('a.to_offset', '>=', Number(event.stream_offset))
    .groupBy('a.device_id');
  const row = await db
    .selectFrom(firsts.as('f'))
    .select((eb) => eb.fn.max('f.first_at').as('last_at'))
    .executeTakeFirst();
  return row?.last_at ?? null;
}
