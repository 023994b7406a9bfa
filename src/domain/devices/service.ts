import type { WriteOptions } from '../../db/unit-of-work.js';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { inTransaction, type Tx } from '../../db/connect.js';
import type { DeviceTable } from '../../db/types.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { recordAudit } from '../audit/record.js';
import { AppError } from '../../errors.js';
import { requireReach } from '../access/admin-scope.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import { placeOfOrg } from '../tenancy/places.js';
import { sha256 } from '../shared/secrets.js';
import { findDeviceByPrefix } from './repo.js';
import { type AuthenticatedDevice, createDeviceInput, DEVICE_TOKEN_PATTERN, type DeviceRecord } from './schema.js';
import { markOverdueForCheck } from '../deadlines/repo.js';

/**
 * How long after the gateway last heard from a connected device it still counts as online: longer than the gateway's heartbeat
 * plus its silence timeout, so a live connection never lapses, yet a crashed instance's devices fall offline after it.
 */
export const ONLINE_WINDOW_MS = 90_000;

function mintToken(): { token: string; prefix: string } {
  const prefix = randomBytes(4).toString('hex');
  return { token: `enk_dev_${prefix}${randomBytes(32).toString('hex')}`, prefix };
}

/** Connected to a gateway that has heard from it within the online window. */
export function isOnline(row: Pick<DeviceTable, 'status' | 'connection_id' | 'last_seen_at'>, now = Date.now()): boolean {
  return row.status === 'active' && row.connection_id !== null && row.last_seen_at !== null && now - Date.parse(row.last_seen_at) <= ONLINE_WINDOW_MS;
}

export function toDeviceRecord(row: DeviceTable, now = Date.now()): DeviceRecord {
  const online = isOnline(row, now);
  return {
    id: row.id,
    orgId: row.org_id,
    name: row.name,
    status: row.status === 'revoked' ? 'revoked' : 'active',
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    online,
    lastSeenAt: row.last_seen_at,
    connectedAt: row.connected_at,
    disconnectedAt: row.disconnected_at,
    ackedOffset: Number(row.acked_offset),
    ackedAt: row.acked_at,
  };
}

function auditDevice(tx: Tx, caller: Caller, row: Pick<DeviceTable, 'id' | 'org_id' | 'name'>, eventType: string): void {
  recordAudit(tx, caller, {
    orgId: row.org_id,
    eventCategory: 'device',
    eventType,
    resource: { type: 'device', id: row.id },
    details: { name: row.name },
  });
}

function newDeviceRow(orgId: string, name: string): { row: DeviceTable; token: string } {
  const { token, prefix } = mintToken();
  return {
    token,
    row: {
      id: newId(),
      org_id: orgId,
      name,
      token_prefix: prefix,
      secret_hash: sha256(token).toString('hex'),
      status: 'active',
      created_at: nowIso(),
      revoked_at: null,
      last_seen_at: null,
      connection_id: null,
      connected_at: null,
      disconnected_at: null,
      acked_offset: 0,
      acked_at: null,
    },
  };
}

/** At most this many devices are registered by one request (one transaction). */
export const MAX_DEVICES_PER_REQUEST = 1_000;

/** Registers base stations of one org in one transaction, so a fleet is one request; each token is returned once, only its SHA-256 is stored. */
export async function createDevices(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  names: string[],
  write: WriteOptions = {},
): Promise<{ id: string; token: string; record: DeviceRecord }[]> {
  const parsed = names.map((name) => createDeviceInput.parse({ name }).name);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      const created = parsed.map((name) => newDeviceRow(place.orgId, name));
      for (let i = 0; i < created.length; i += 200) {
        await tx.db
          .insertInto('devices')
          .values(created.slice(i, i + 200).map((c) => c.row))
          .execute();
      }
      for (const { row } of created) auditDevice(tx, caller, row, 'device.created');
      return created.map(({ row, token }) => ({ id: row.id, token, record: toDeviceRecord(row) }));
    },
    write.idempotency,
  );
}

export async function createDevice(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  input: { name: string },
): Promise<{ id: string; token: string; record: DeviceRecord }> {
  const [created] = await createDevices(ctx, caller, orgId, [input.name]);
  return created!;
}

/** The device row, when it exists and its org lies within the caller's subject (else 404, outside it as when unknown). */
async function loadDevice(tx: Pick<Tx, 'db'>, caller: Caller, deviceId: string): Promise<DeviceTable> {
  const row = isUuid(deviceId) ? await tx.db.selectFrom('devices').selectAll().where('id', '=', deviceId.toLowerCase()).executeTakeFirst() : undefined;
  if (!row) throw new AppError('not_found', `No device ${deviceId}.`);
  requireReach(caller, await placeOfOrg(tx.db, row.org_id), `No device ${deviceId}.`);
  return row;
}

/**
 * Revokes a device: its token stops authenticating at once, and gateways close its open socket at
 * their next revocation check (a few seconds). Revoking twice is a no-op.
 */
export async function revokeDevice(ctx: AppContext, caller: Caller, deviceId: string, write: WriteOptions = {}): Promise<DeviceRecord> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row = await loadDevice(tx, caller, deviceId);
      if (row.status === 'revoked') return toDeviceRecord(row);
      const revokedAt = nowIso();
      await tx.db.updateTable('devices').set({ status: 'revoked', revoked_at: revokedAt }).where('id', '=', row.id).where('org_id', '=', row.org_id).execute();
      // Overdue events it had not acknowledged may now be complete: the deadline worker looks at them.
      await markOverdueForCheck(tx, row.org_id, Number(row.acked_offset), null, revokedAt);
      auditDevice(tx, caller, row, 'device.revoked');
      return toDeviceRecord({ ...row, status: 'revoked', revoked_at: revokedAt });
    },
    write.idempotency,
  );
}

/**
 * Gives an active device a new token; the old one stops authenticating at once. A socket already open
 * with the old token stays open (it authenticated when it connected); revoke to cut it.
 */
export async function rotateDeviceToken(
  ctx: AppContext,
  caller: Caller,
  deviceId: string,
  write: WriteOptions = {},
): Promise<{ token: string; record: DeviceRecord }> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row = await loadDevice(tx, caller, deviceId);
      if (row.status !== 'active') throw new AppError('conflict', `Device ${deviceId} is revoked; register a new device instead.`);
      const { token, prefix } = mintToken();
      const secretHash = sha256(token).toString('hex');
      await tx.db
        .updateTable('devices')
        .set({ token_prefix: prefix, secret_hash: secretHash })
        .where('id', '=', row.id)
        .where('org_id', '=', row.org_id)
        .execute();
      auditDevice(tx, caller, row, 'device.token_rotated');
      return { token, record: toDeviceRecord({ ...row, token_prefix: prefix, secret_hash: secretHash }) };
    },
    write.idempotency,
  );
}

/** Devices of one org (authorized), or of every org for the operator. */
export async function listDevices(ctx: AppContext, caller: Caller, filter: { orgId?: string } = {}): Promise<DeviceRecord[]> {
  let query = ctx.db.db.selectFrom('devices').selectAll();
  if (filter.orgId !== undefined) {
    const org = await authorize(ctx, caller, filter.orgId, 'events:read');
    query = query.where('org_id', '=', org.id);
  } else if (caller.principal.kind !== 'operator') {
    throw new Error('Listing devices across organizations is reserved to the operator.');
  }
  const rows = await query.orderBy('org_id').orderBy('created_at').orderBy('id').execute();
  const now = Date.now();
  return rows.map((row) => toDeviceRecord(row, now));
}

/**
 * Verifies a device bearer token: one indexed lookup by the public 8-hex id, then a constant-time
 * comparison of SHA-256 digests. No cache: a revoked device must not be able to reconnect.
 */
export async function authenticateDevice(ctx: AppContext, token: string | undefined): Promise<AuthenticatedDevice | null> {
  if (!token) return null;
  const match = DEVICE_TOKEN_PATTERN.exec(token);
  if (!match) return null;
  const row = await findDeviceByPrefix(ctx.db.db, match[1]!);
  if (!row) return null;
  if (!timingSafeEqual(sha256(token), Buffer.from(row.secret_hash, 'hex'))) return null;
  if (row.status !== 'active') return null;
  return { id: row.id, orgId: row.org_id, name: row.name };
}
