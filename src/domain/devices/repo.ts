import type { Kysely } from 'kysely';
import { type DbHandle, inTransaction } from '../../db/connect.js';
import type { Database, DeviceTable } from '../../db/types.js';

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

/** Refreshes last_seen_at of connected devices, grouped so that 10,000 devices cost a handful of statements. */
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
 * Acknowledged offsets only move forward. Each advance is also kept as a row of the ack history
 * (the receipts' "first ack that covered the event"); the gateway coalesces a device's acks into one
 * per flush, so the history grows by at most one row per device per flush interval.
 */
export async function recordAcks(handle: DbHandle, acks: AckUpdate[]): Promise<void> {
  if (acks.length === 0) return;
  // Acks of one flush mostly share their org and offset (every device acks the same frames), and many
  // their arrival time: one statement per such group, not one per device, so a flush of a thousand
  // devices' acks costs a few statements.
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
        const advanced = await tx.db
          .updateTable('devices')
          .set({ acked_offset: offset, acked_at: at })
          .where('org_id', '=', orgId)
          .where('id', 'in', deviceIds.slice(i, i + CHUNK))
          .where('acked_offset', '<', offset)
          .returning('id')
          .execute();
        for (const row of advanced) history.push({ device_id: row.id, org_id: orgId, to_offset: offset, acked_at: at });
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
