import { operatorCaller } from '../domain/access/principal.js';
import { createDevice, listDevices, revokeDevice } from '../domain/devices/service.js';
import { type CliCommand, requireOption, UsageError } from './command.js';
import { simulateDevice } from './device-simulator.js';

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

function requireUuid(value: string, what: string): string {
  if (!UUID.test(value)) throw new UsageError(`${what} must be a UUID`);
  return value.toLowerCase();
}

export const deviceCommands: Record<string, CliCommand> = {
  'admin device create': {
    usage: '--org ID --name N   (prints the device token once)',
    options: { org: { type: 'string' }, name: { type: 'string' } },
    run: async ({ ctx, values }) => {
      const orgId = requireUuid(requireOption(values, 'org'), '--org');
      const { id, token } = await createDevice(ctx, operatorCaller(), orgId, { name: requireOption(values, 'name') });
      return { id, token };
    },
  },
  'admin device list': {
    usage: '[--org ID]   (online state, lastSeenAt, acknowledged offset; never shows tokens)',
    options: { org: { type: 'string' } },
    run: async ({ ctx, values }) => {
      const orgId = typeof values.org === 'string' ? requireUuid(values.org, '--org') : undefined;
      return { items: await listDevices(ctx, operatorCaller(), { orgId }) };
    },
  },
  'admin device revoke': {
    usage: 'ID   (the token stops working; an open connection is closed within seconds)',
    positionals: ['ID'],
    run: async ({ ctx, positionals }) => {
      const record = await revokeDevice(ctx, operatorCaller(), requireUuid(positionals[0]!, 'ID'));
      return { id: record.id, status: record.status, revokedAt: record.revokedAt };
    },
  },
  'device simulate': {
    usage: '--url ws://HOST:PORT/devices/v1/stream --token enk_dev_... [--after N]   prints alerts like a base station; reconnects with after=<last offset>',
    options: { url: { type: 'string' }, token: { type: 'string' }, after: { type: 'string' } },
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
      await simulateDevice({ url, token, after, json: process.argv.includes('--json') });
      return undefined;
    },
  },
};
