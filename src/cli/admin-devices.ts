import type { AppContext } from '../context.js';
import { operatorCaller } from '../domain/access/principal.js';
import { listOrgDevices } from '../domain/devices/receipts.js';
import type { DeviceReceiptItem } from '../domain/devices/receipt-schema.js';
import { createDevice, revokeDevice, rotateDeviceToken } from '../domain/devices/service.js';
import { type AdminApi, path, secretOf } from './admin-api.js';
import { allOrgIds, localTree, remoteTree } from './admin-directory.js';
import { adminCommand, type CliCommand, type CliPositional, listAll, requireOption, UsageError } from './command.js';

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

function requireUuid(value: string, what: string): string {
  if (!UUID.test(value)) throw new UsageError(`${what} must be a UUID`);
  return value.toLowerCase();
}

/** A device in `admin device list`: its org's list entry (presence, acknowledged offset, lag) with the org's id. */
type DeviceView = { id: string; orgId: string } & Omit<DeviceReceiptItem, 'deviceId'>;

function deviceView(orgId: string, item: DeviceReceiptItem): DeviceView {
  return {
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
  };
}

/** The admin API's device record (`deviceId`), with its token in a creating or rotating answer. */
interface DeviceAnswer {
  deviceId: string;
  orgId: string;
  status: 'active' | 'revoked';
  revokedAt: string | null;
  token?: string;
}

/** The devices of the given org, or of every org the caller reaches, org by org. */
async function devicesOf(orgId: string | undefined, orgIds: () => Promise<string[]>, page: (orgId: string) => Promise<DeviceReceiptItem[]>) {
  const items: DeviceView[] = [];
  for (const id of orgId ? [orgId] : await orgIds()) items.push(...(await page(id)).map((item) => deviceView(id, item)));
  return { items };
}

const ID: CliPositional[] = [{ name: 'ID', description: 'the device id' }];

type Revoked = { id: string; status: string; revokedAt: string | null };

export const deviceCommands: Record<string, CliCommand> = {
  'admin device create': adminCommand<{ orgId: string; name: string }, { id: string; token: string }>({
    summary: 'register a base-station device of an org; prints its token once',
    options: {
      org: { type: 'string', value: 'ID', required: true, description: 'the org whose alerts it receives' },
      name: { type: 'string', value: 'N', required: true, description: 'a name for the device, e.g. "Lobby station"' },
    },
    input: ({ values }) => ({ orgId: requireUuid(requireOption(values, 'org'), '--org'), name: requireOption(values, 'name') }),
    local: async (ctx, { orgId, name }) => {
      const { id, token } = await createDevice(ctx, operatorCaller(), orgId, { name });
      return { id, token };
    },
    remote: async (api, { orgId, name }) => {
      const created = await api.post<DeviceAnswer>(path`/orgs/${orgId}/devices`, { name });
      return { id: created.deviceId, token: secretOf(created.token, `device ${created.deviceId}`, 'rotate its token to get one') };
    },
  }),
  'admin device list': adminCommand<string | undefined, { items: DeviceView[] }>({
    summary: 'list devices: online state, last seen, acknowledged offset, lag (never their tokens)',
    options: { org: { type: 'string', value: 'ID', description: 'only the devices of this org (default: every org, org by org)' } },
    columns: ['id', 'orgId', 'name', 'status', 'online', 'lastSeenAt', 'ackedOffset', 'lag'],
    input: ({ values }) => (typeof values.org === 'string' ? requireUuid(values.org, '--org') : undefined),
    local: (ctx: AppContext, orgId) =>
      devicesOf(
        orgId,
        () => allOrgIds(localTree(ctx)),
        (id) => listAll((page) => listOrgDevices(ctx, operatorCaller(), id, page)),
      ),
    remote: (api: AdminApi, orgId) =>
      devicesOf(
        orgId,
        () => allOrgIds(remoteTree(api)),
        (id) => listAll((page) => api.page<DeviceReceiptItem>(path`/orgs/${id}/devices`, page)),
      ),
  }),
  'admin device revoke': adminCommand<string, Revoked>({
    summary: 'revoke a device: its token stops working and an open connection is closed within seconds',
    positionals: ID,
    input: ({ positionals }) => requireUuid(positionals[0]!, 'ID'),
    local: async (ctx, id) => {
      const record = await revokeDevice(ctx, operatorCaller(), id);
      return { id: record.id, status: record.status, revokedAt: record.revokedAt };
    },
    remote: async (api, id) => {
      const record = await api.post<DeviceAnswer>(path`/devices/${id}/revoke`);
      return { id: record.deviceId, status: record.status, revokedAt: record.revokedAt };
    },
  }),
  'admin device rotate-token': adminCommand<string, { id: string; token: string }>({
    summary: 'give a device a new token, printed once; the old one stops authenticating at once',
    positionals: ID,
    details: ['A connection already open with the old token stays open; revoke the device to cut it.'],
    input: ({ positionals }) => requireUuid(positionals[0]!, 'ID'),
    local: async (ctx, id) => {
      const { token, record } = await rotateDeviceToken(ctx, operatorCaller(), id);
      return { id: record.id, token };
    },
    remote: async (api, id) => {
      const rotated = await api.post<DeviceAnswer>(path`/devices/${id}/rotate-token`);
      return { id: rotated.deviceId, token: secretOf(rotated.token, `token of device ${id}`, 'rotate it again') };
    },
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
