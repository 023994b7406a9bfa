import { operatorCaller } from '../domain/access/principal.js';
import { createDevice, listDevices, revokeDevice } from '../domain/devices/service.js';
import { type CliCommand, requireOption, UsageError } from './command.js';

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

function requireUuid(value: string, what: string): string {
  if (!UUID.test(value)) throw new UsageError(`${what} must be a UUID`);
  return value.toLowerCase();
}

export const deviceCommands: Record<string, CliCommand> = {
  'admin device create': {
    summary: 'register a base-station device of an org; prints its token once',
    options: {
      org: { type: 'string', value: 'ID', required: true, description: 'the org whose alerts it receives' },
      name: { type: 'string', value: 'N', required: true, description: 'a name for the device, e.g. "Lobby station"' },
    },
    run: async ({ ctx, values }) => {
      const orgId = requireUuid(requireOption(values, 'org'), '--org');
      const { id, token } = await createDevice(ctx, operatorCaller(), orgId, { name: requireOption(values, 'name') });
      return { id, token };
    },
  },
  'admin device list': {
    summary: 'list devices: online state, last seen, acknowledged offset (never their tokens)',
    options: { org: { type: 'string', value: 'ID', description: 'only the devices of this org' } },
    columns: ['id', 'orgId', 'name', 'status', 'online', 'lastSeenAt', 'ackedOffset'],
    run: async ({ ctx, values }) => {
      const orgId = typeof values.org === 'string' ? requireUuid(values.org, '--org') : undefined;
      return { items: await listDevices(ctx, operatorCaller(), { orgId }) };
    },
  },
  'admin device revoke': {
    summary: 'revoke a device: its token stops working and an open connection is closed within seconds',
    positionals: [{ name: 'ID', description: 'the device id' }],
    run: async ({ ctx, positionals }) => {
      const record = await revokeDevice(ctx, operatorCaller(), requireUuid(positionals[0]!, 'ID'));
      return { id: record.id, status: record.status, revokedAt: record.revokedAt };
    },
  },
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
