import { operatorCaller } from '../domain/access/principal.js';
import {
  categoryMappingInput,
  getCategoryMapping,
  MAPPED_INTEGRATIONS,
  type MappedIntegration,
  updateCategoryMapping,
} from '../domain/integrations/category-mapping.js';
import {
  createIntegrationKey,
  createIntegrationKeyInput,
  type IntegrationKeyRecord,
  listIntegrationKeys,
  revokeIntegrationKey,
} from '../domain/integrations/keys.js';
import { path, secretOf } from './admin-api.js';
import { type AdminList, adminCommand, itemsOf } from './admin-command.js';
import { type CliCommand, type CliOption, requireOption, UsageError } from './command.js';

const ORG: CliOption = { type: 'string', value: 'ID', required: true, description: 'the org' };
const INTEGRATION: CliOption = { type: 'string', value: 'NAME', required: true, description: `the integration: ${MAPPED_INTEGRATIONS.join(' or ')}` };

const KEYS: AdminList<string, IntegrationKeyRecord> = {
  page: (ctx, orgId, page) => listIntegrationKeys(ctx, operatorCaller(), orgId, page),
  route: (orgId) => path`/orgs/${orgId}/integration-keys`,
};

function integrationOf(value: string): MappedIntegration {
  if (!(MAPPED_INTEGRATIONS as readonly string[]).includes(value)) throw new UsageError(`--integration must be ${MAPPED_INTEGRATIONS.join(' or ')}`);
  return value as MappedIntegration;
}

/** `VALUE=CATEGORY,...`: each value mapped to a category (by name or id); `VALUE=` removes the value's entry. */
function parseMap(value: string | boolean | undefined): Record<string, string | null> | undefined {
  if (typeof value !== 'string') return undefined;
  const map: Record<string, string | null> = {};
  for (const pair of value.split(',').filter((p) => p.trim() !== '')) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError('--map takes VALUE=CATEGORY pairs separated by commas, e.g. critical=Fire,warning=Medical (VALUE= removes one)');
    const category = pair.slice(at + 1).trim();
    map[pair.slice(0, at).trim()] = category === '' ? null : category;
  }
  return map;
}

/** Monitoring integrations of an org (docs/integrations.md): PagerDuty routing keys, and how alerts pick their category. */
export const integrationCommands: Record<string, CliCommand> = {
  'admin integration-key create': adminCommand({
    summary: 'mint an integration key (a PagerDuty Events v2 routing_key) for an org; prints it once',
    options: { org: ORG, name: { type: 'string', value: 'N', required: true, description: 'what sends with it, e.g. "Datadog production"' } },
    input: ({ values }) => ({ orgId: requireOption(values, 'org'), body: createIntegrationKeyInput.parse({ name: requireOption(values, 'name') }) }),
    local: async (ctx, { orgId, body }): Promise<IntegrationKeyRecord & { key?: string }> => {
      const { key, record } = await createIntegrationKey(ctx, operatorCaller(), orgId, body);
      return { ...record, key };
    },
    route: ({ orgId, body }) => ({ post: path`/orgs/${orgId}/integration-keys`, body }),
    present: (created) => ({ id: created.id, key: secretOf(created.key, `integration key ${created.id}`, 'revoke it and create another') }),
  }),
  'admin integration-key list': adminCommand({
    summary: "list an org's integration keys (never the keys themselves)",
    options: { org: ORG },
    columns: ['id', 'name', 'kind', 'status', 'createdAt', 'lastUsedAt'],
    input: ({ values }) => requireOption(values, 'org'),
    read: (read, orgId) => read(KEYS, orgId),
    present: itemsOf((r: IntegrationKeyRecord) => r),
  }),
  'admin integration-key revoke': adminCommand({
    summary: 'revoke an integration key (its events are refused within seconds)',
    positionals: [{ name: 'ID', description: 'the integration key id' }],
    options: { org: ORG },
    input: ({ values, positionals }) => ({ orgId: requireOption(values, 'org'), id: positionals[0]! }),
    local: (ctx, { orgId, id }) => revokeIntegrationKey(ctx, operatorCaller(), orgId, id),
    route: ({ orgId, id }) => ({ post: path`/orgs/${orgId}/integration-keys/${id}/revoke` }),
    present: (record) => ({ id: record.id, status: record.status }),
  }),
  'admin integration-mapping show': adminCommand({
    summary: "show how an integration's alerts pick their category in an org",
    options: { org: ORG, integration: INTEGRATION },
    input: ({ values }) => ({ orgId: requireOption(values, 'org'), integration: integrationOf(requireOption(values, 'integration')) }),
    local: (ctx, { orgId, integration }) => getCategoryMapping(ctx, operatorCaller(), orgId, integration),
    route: ({ orgId, integration }) => ({ get: path`/orgs/${orgId}/integrations/${integration}/category-mapping` }),
  }),
  'admin integration-mapping set': adminCommand({
    summary: "set the field that picks an integration's category and map its values to categories",
    options: {
      org: ORG,
      integration: INTEGRATION,
      field: { type: 'string', value: 'NAME', description: 'the Alertmanager label, or PagerDuty payload field, that picks the category (default severity)' },
      map: {
        type: 'string',
        value: 'V=CATEGORY,...',
        description: 'values mapped to categories by name or id, e.g. critical=Fire,warning=Medical; V= removes one',
      },
    },
    details: ['A value without an entry lands in the category of the same name (case-insensitively), else in Uncategorized.'],
    input: ({ values }) => {
      const orgId = requireOption(values, 'org');
      const integration = integrationOf(requireOption(values, 'integration'));
      const changes = { categoryField: typeof values.field === 'string' ? values.field : undefined, categoryMap: parseMap(values.map) };
      if (changes.categoryField === undefined && changes.categoryMap === undefined) throw new UsageError('give --field or --map');
      // Validated here by the service's own schema, so that a bad value is the same usage error in both modes.
      return { orgId, integration, body: categoryMappingInput.parse(changes) };
    },
    local: (ctx, { orgId, integration, body }) => updateCategoryMapping(ctx, operatorCaller(), orgId, integration, body),
    route: ({ orgId, integration, body }) => ({ patch: path`/orgs/${orgId}/integrations/${integration}/category-mapping`, body }),
  }),
};
