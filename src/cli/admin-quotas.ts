import { operatorCaller } from '../domain/access/principal.js';
import {
  connectionQuotasInput,
  getOrgConnectionQuotas,
  getPartnerConnectionQuotas,
  type OrgConnectionQuotas,
  type PartnerConnectionQuotas,
  updateOrgConnectionQuotas,
  updatePartnerConnectionQuotas,
} from '../domain/tenancy/connection-quotas.js';
import { path } from './admin-api.js';
import { adminCommand } from './admin-command.js';
import { type CliCommand, type CliOption, UsageError } from './command.js';

type Quotas = OrgConnectionQuotas | PartnerConnectionQuotas;
type Tenant = { scope: 'org' | 'partner'; id: string };

const TENANT_OPTIONS: Record<string, CliOption> = {
  org: { type: 'string', value: 'ID', description: 'the organization (its own quotas)' },
  partner: { type: 'string', value: 'ID', description: 'the partner (all its organizations together)' },
};

/** `--org ID` or `--partner ID`, exactly one. */
function tenantOf(values: Record<string, string | boolean | undefined>): Tenant {
  const org = typeof values.org === 'string' && values.org.trim() !== '' ? values.org : undefined;
  const partner = typeof values.partner === 'string' && values.partner.trim() !== '' ? values.partner : undefined;
  if ((org === undefined) === (partner === undefined)) throw new UsageError('give either --org or --partner');
  return org !== undefined ? { scope: 'org', id: org } : { scope: 'partner', id: partner! };
}

/** A quota option: a whole number, or `default` for the instance's setting. */
function quotaValue(value: string | boolean | undefined, flag: string): number | null | undefined {
  if (typeof value !== 'string') return undefined;
  if (value === 'default') return null;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${flag} must be a whole number or default`);
  return Number(value);
}

const routeOf = (t: Tenant) => (t.scope === 'org' ? path`/orgs/${t.id}/connection-quotas` : path`/partners/${t.id}/connection-quotas`);

const DETAILS = [
  'Quotas count per instance: device sockets and event streams one org, or all orgs of one partner, may hold on each instance.',
  'Defaults: DEVICES_PER_ORG, STREAMS_PER_ORG, DEVICES_PER_PARTNER, STREAMS_PER_PARTNER.',
];

export const quotaCommands: Record<string, CliCommand> = {
  'admin quota show': adminCommand({
    summary: "show an org's or a partner's connection quotas (device sockets, event streams per instance)",
    options: TENANT_OPTIONS,
    details: DETAILS,
    input: ({ values }) => tenantOf(values),
    local: (ctx, t): Promise<Quotas> =>
      t.scope === 'org' ? getOrgConnectionQuotas(ctx, operatorCaller(), t.id) : getPartnerConnectionQuotas(ctx, operatorCaller(), t.id),
    route: (t) => ({ get: routeOf(t) }),
  }),
  'admin quota set': adminCommand({
    summary: "raise or lower an org's or a partner's connection quotas (default: back to the instance's setting)",
    options: {
      ...TENANT_OPTIONS,
      devices: { type: 'string', value: 'N|default', description: 'device sockets (base stations) held at once per instance' },
      streams: { type: 'string', value: 'N|default', description: 'event streams held at once per instance' },
    },
    details: DETAILS,
    input: ({ values }) => {
      const tenant = tenantOf(values);
      const changes = { devices: quotaValue(values.devices, 'devices'), streams: quotaValue(values.streams, 'streams') };
      if (changes.devices === undefined && changes.streams === undefined) throw new UsageError('give --devices or --streams');
      // Validated here by the service's own schema, so that a bad value is the same usage error in both modes.
      return { ...tenant, body: connectionQuotasInput.parse(changes) };
    },
    local: (ctx, { body, ...t }): Promise<Quotas> =>
      t.scope === 'org' ? updateOrgConnectionQuotas(ctx, operatorCaller(), t.id, body) : updatePartnerConnectionQuotas(ctx, operatorCaller(), t.id, body),
    route: ({ body, ...t }) => ({ patch: routeOf(t), body }),
  }),
};
