import type { z } from 'zod';
import { type deviceRecord, presentDevice } from '../domain/presenters/admin-records.js';
import { operatorCaller } from '../domain/access/principal.js';
import { listOrgDevices } from '../domain/devices/receipts.js';
import type { DeviceReceiptItem } from '../domain/devices/receipt-schema.js';
import type { DeviceRecord } from '../domain/devices/schema.js';
import { createDevice, revokeDevice, rotateDeviceToken } from '../domain/devices/service.js';
import { path, secretOf } from './admin-api.js';
import { type AdminList, adminCommand } from './admin-command.js';
import { allOrgIds } from './admin-directory.js';
import { type CliCommand, type CliPositional, requireOption, UsageError } from './command.js';

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

function requireUuid(value: string, what: string): string {
  if (!UUID.test(value)) throw new UsageError(`${what} must be a UUID`);
  return value.toLowerCase();
}

/** A device as the admin API answers it (`deviceId`), with its token in a creating or rotating answer. */
export type DeviceAnswer = z.infer<typeof deviceRecord>;

/** The admin API's record of the device, with the token the service gave with it. */
const asDeviceAnswer = (r: DeviceRecord, token?: string): DeviceAnswer => ({ ...presentDevice(r), token });

/** An org's devices with presence and receipts: the same list entries from the service and the admin API. */
const DEVICES: AdminList<string, DeviceReceiptItem> = {
  page: (ctx, orgId, page) => listOrgDevices(ctx, operatorCaller(), orgId, page),
  route: (orgId) => path`/orgs/${orgId}/devices`,
};

/** A device in `admin device list`: its org's list entry (presence, acknowledged offset, lag) with the org's id. */
const deviceRow = (orgId: string, item: DeviceReceiptItem) => ({
  id: item.deviceId,
  orgId,
  name: item.name,
  status: item.status,
  online: item.online,
  connectedAt: item.connectedAt,
  lastSeenAt: item.lastSeenAt,
  ackedOffset: item.ackedOffset,
  ackedAt: item.ackedAt,
  lag: item.lag,
});

const ID: CliPositional[] = [{ name: 'ID', description: 'the device id' }];

export const deviceCommands: Record<string, CliCommand> = {
  'admin device create': adminCommand({
    summary: 'register a base-station device of an org; prints its token once',
    options: {
      org: { type: 'string', value: 'ID', required: true, description: 'the org whose alerts it receives' },
      name: { type: 'string', value: 'N', required: true, description: 'a name for the device, e.g. "Lobby station"' },
    },
    input: ({ values }) => ({ orgId: requireUuid(requireOption(values, 'org'), '--org'), name: requireOption(values, 'name') }),
    local: async (ctx, { orgId, name }) => {
      const { token, record } = await createDevice(ctx, operatorCaller(), orgId, { name });
      return asDeviceAnswer(record, token);
    },
    route: ({ orgId, name }) => ({ post: DEVICES.route(orgId), body: { name } }),
    present: (created) => ({ id: created.deviceId, token: secretOf(created.token, `device ${created.deviceId}`, 'rotate its token to get one') }),
  }),
  'admin device list': adminCommand({
    summary: 'list devices: online state, last seen, acknowledged offset, lag (never their tokens)',
    options: { org: { type: 'string', value: 'ID', description: 'only the devices of this org (default: every org, org by org)' } },
    columns: ['id', 'orgId', 'name', 'status', 'online', 'lastSeenAt', 'ackedOffset', 'lag'],
    input: ({ values }) => (typeof values.org === 'string' ? requireUuid(values.org, '--org') : undefined),
    read: async (read, orgId) => {
      const items = [];
      for (const id of orgId ? [orgId] : await allOrgIds(read)) items.push(...(await read(DEVICES, id)).map((item) => deviceRow(id, item)));
      return { items };
    },
  }),
  'admin device revoke': adminCommand({
    summary: 'revoke a device: its token stops working and an open connection is closed within seconds',
    positionals: ID,
    input: ({ positionals }) => requireUuid(positionals[0]!, 'ID'),
    local: async (ctx, id) => asDeviceAnswer(await revokeDevice(ctx, operatorCaller(), id)),
    route: (id) => ({ post: path`/devices/${id}/revoke` }),
    present: (record) => ({ id: record.deviceId, status: record.status, revokedAt: record.revokedAt }),
  }),
  'admin device rotate-token': adminCommand({
    summary: 'give a device a new token, printed once; the old one stops authenticating at once',
    positionals: ID,
    details: ['A connection already open with the old token stays open; revoke the device to cut it.'],
    input: ({ positionals }) => requireUuid(positionals[0]!, 'ID'),
    local: async (ctx, id) => {
      const { token, record } = await rotateDeviceToken(ctx, operatorCaller(), id);
      return asDeviceAnswer(record, token);
    },
    route: (id) => ({ post: path`/devices/${id}/rotate-token` }),
    present: (rotated, id) => ({ id: rotated.deviceId, token: secretOf(rotated.token, `token of device ${id}`, 'rotate it again') }),
  }),
  'device simulate': {
    summary: 'connect like a base station and print its alerts; reconnects with after=<last offset>',
    options: {
      url: { type: 'string', value: 'URL', required: true, description: 'the device stream, ws://HOST:PORT/devices/v1/stream' },
      token: { type: 'string', value: 'TOKEN', required: true, description: 'the device token (enk_dev_...)' },
      after: { type: 'string', value: 'N', description: 'resume after this offset of the org stream' },
    },
    json: 'print each event frame as one JSON line instead of a readable alert',
    details: ['Runs until interrupted (Ctrl-C); a refused or revoked token ends it with an error.'],
    standalone: true,
    run: async ({ values }) => {
      const url = requireOption(values, 'url');
      if (!/^wss?:\/\//.test(url)) throw new UsageError('--url must start with ws:// or wss://');
      const token = requireOption(values, 'token');
      let after: number | undefined;
      if (values.after !== undefined) {
        if (typeof values.after !== 'string' || !/^\d{1,15}$/.test(values.after)) throw new UsageError('--after must be a non-negative integer');
        after = Number(values.after);
      }
      // The WebSocket client is loaded by this command only.
      const { simulateDevice } = await import('./device-simulator.js');
      await simulateDevice({ url, token, after, json: process.argv.includes('--json') });
      return undefined;
    },
  },
};
