import { operatorCaller } from '../domain/access/principal.js';
import { capMappingInput } from '../domain/cap/schema.js';
import { deleteCapMapping, listCapMappings, setCapMapping } from '../domain/cap/service.js';
import { path } from './admin-api.js';
import { adminCommand } from './admin-command.js';
import { type CliCommand, type CliOption, requireOption } from './command.js';

const ORG: CliOption = { type: 'string', value: 'ID', required: true, description: 'the org' };

/** An org's mapping of CAP `event` names to its categories, which ingested CAP alerts follow (docs/cap.md). */
export const capCommands: Record<string, CliCommand> = {
  'admin cap-mapping set': adminCommand({
    summary: 'map a CAP event to a category of an org (replacing the mapping of that event); prints the mapping',
    options: {
      org: ORG,
      event: { type: 'string', value: 'TEXT', required: true, description: 'the CAP event, matched case-insensitively, e.g. "SEVERE THUNDERSTORM"' },
      category: { type: 'string', value: 'NAME', description: 'the category, by name (or --category-id)' },
      'category-id': { type: 'string', value: 'ID', description: 'the category, by id (or --category)' },
    },
    input: ({ values }) => ({
      orgId: requireOption(values, 'org'),
      body: capMappingInput.parse({
        event: requireOption(values, 'event'),
        ...(typeof values.category === 'string' ? { categoryName: values.category } : {}),
        ...(typeof values['category-id'] === 'string' ? { categoryId: values['category-id'] } : {}),
      }),
    }),
    local: async (ctx, { orgId, body }) => (await setCapMapping(ctx, operatorCaller(), orgId, body)).mapping,
    route: ({ orgId, body }) => ({ post: path`/orgs/${orgId}/cap-mappings`, body }),
  }),
  'admin cap-mapping list': adminCommand({
    summary: "list an org's CAP event mappings, by event",
    options: { org: ORG },
    columns: ['mappingId', 'event', 'categoryName'],
    input: ({ values }) => requireOption(values, 'org'),
    local: (ctx, orgId) => listCapMappings(ctx, operatorCaller(), orgId),
    route: (orgId) => ({ get: path`/orgs/${orgId}/cap-mappings` }),
  }),
  'admin cap-mapping delete': adminCommand({
    summary: 'remove a mapping: alerts with its event land in Uncategorized again',
    positionals: [{ name: 'ID', description: 'the mapping id' }],
    options: { org: ORG },
    input: ({ values, positionals }) => ({ orgId: requireOption(values, 'org'), mappingId: positionals[0]! }),
    local: (ctx, { orgId, mappingId }) => deleteCapMapping(ctx, operatorCaller(), orgId, mappingId),
    route: ({ orgId, mappingId }) => ({ delete: path`/orgs/${orgId}/cap-mappings/${mappingId}` }),
  }),
};
