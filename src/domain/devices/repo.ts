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
  await inTransaction(handle, async (tx) => {
    const advanced: AckUpdate[] = [];
    for (const ack of acks) {
      const result = await tx.db
        .updateTable('devices')
        .set({ acked_offset: ack.offset, acked_at: ack.at })
        .where('id', '=', ack.deviceId)
        .where('org_id', '=', ack.orgId)
        .where('acked_offset', '<', ack.offset)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) > 0) advanced.push(ack);
    }
    for (let i = 0; i < advanced.length; i += CHUNK) {
      await tx.db
        .insertInto('device_acks')
        .values(advanced.slice(i, i + CHUNK).map((a) => ({ device_id: a.deviceId, org_id: a.orgId, to_offset: a.offset, acked_at: a.at })))
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
