import { operatorCaller } from '../domain/access/principal.js';
import { categoryCreateInput, categoryUpdateInput } from '../domain/categories/schema.js';
import { createCategory, updateCategory } from '../domain/categories/service.js';
import {
  createEnterprise,
  createOrg,
  createPartner,
  type EnterpriseRecord,
  listEnterprises,
  listOrgs,
  listPartners,
  type OrgRecord,
  orgUpdateInput,
  type PartnerRecord,
  updateOrg,
} from '../domain/orgs/service.js';
import { userCreateInput, userUpdateInput } from '../domain/users/schema.js';
import { createUser, updateUser } from '../domain/users/service.js';
import { path } from './admin-api.js';
import { type AdminList, adminCommand, asItems, createdId, type ReadList } from './admin-command.js';
import { type CliCommand, type CliOption, requireOption, UsageError } from './command.js';

/** The tenant tree's lists: the services answer the admin API's records as they are. */
const PARTNERS: AdminList<void, PartnerRecord> = {
  page: (ctx, _, page) => listPartners(ctx, operatorCaller(), page),
  route: () => '/partners',
};
const ENTERPRISES: AdminList<string, EnterpriseRecord> = {
  page: (ctx, partnerId, page) => listEnterprises(ctx, operatorCaller(), partnerId, page),
  route: (partnerId) => path`/partners/${partnerId}/enterprises`,
};
const ORGS: AdminList<string, OrgRecord> = {
  page: (ctx, enterpriseId, page) => listOrgs(ctx, operatorCaller(), enterpriseId, page),
  route: (enterpriseId) => path`/enterprises/${enterpriseId}/orgs`,
};

/** Every org the caller reaches, partner by partner, enterprise by enterprise. */
export async function allOrgIds(read: ReadList): Promise<string[]> {
  const ids: string[] = [];
  for (const partner of await read(PARTNERS, undefined)) {
    for (const enterprise of await read(ENTERPRISES, partner.partnerId)) {
      ids.push(...(await read(ORGS, enterprise.enterpriseId)).map((org) => org.orgId));
    }
  }
  return ids;
}

const NAME: CliOption = { type: 'string', value: 'N', required: true, description: 'the name' };
const ORG: CliOption = { type: 'string', value: 'ID', required: true, description: 'the org' };

const CATEGORY_OPTIONS: Record<string, CliOption> = {
  name: { type: 'string', value: 'N', description: 'the category name (unique in the org, case-insensitively)' },
  color: { type: 'string', value: '"#RRGGBB"', description: 'display colour, e.g. "#D32F2F"' },
  severity: { type: 'string', value: '0..5', description: 'severity from 0 (lowest) to 5' },
  'response-level': { type: 'string', value: 'LEVEL', description: 'none, hold, secure, lockdown, evacuate, shelter or medical' },
};

const USER_OPTIONS: Record<string, CliOption> = {
  'first-name': { type: 'string', value: 'F', description: 'first name' },
  'last-name': { type: 'string', value: 'L', description: 'last name' },
  email: { type: 'string', value: 'E', description: 'e-mail address' },
  role: { type: 'string', value: 'ROLE', description: 'responder, user (the default) or visitor' },
  phone: { type: 'string', value: 'P', description: 'phone number' },
};

const CATEGORY_REQUIRED = ['name', 'color', 'severity', 'response-level'];
const USER_REQUIRED = ['first-name', 'last-name', 'email'];

/** The options, those named marked required. */
const required = (options: Record<string, CliOption>, names: string[]) =>
  Object.fromEntries(Object.entries(options).map(([name, option]) => [name, names.includes(name) ? { ...option, required: true } : option]));

/** The options given, under the field names of the service's input (absent ones left out; `required` ones must be there). */
function fields(values: Record<string, string | boolean | undefined>, names: Record<string, string>, required: string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [option, field] of Object.entries(names)) {
    if (required.includes(option)) out[field] = requireOption(values, option);
    else if (typeof values[option] === 'string') out[field] = values[option];
  }
  return out;
}

const CATEGORY_FIELDS = { name: 'name', color: 'color', severity: 'severity', 'response-level': 'responseLevel' };
const USER_FIELDS = {
  'first-name': 'firstName',
  'last-name': 'lastName',
  email: 'email',
  role: 'role',
  phone: 'phoneNumber',
  'access-level': 'accessLevel',
  status: 'status',
};

export const directoryCommands: Record<string, CliCommand> = {
  'admin partner create': adminCommand({
    summary: 'create a partner; prints its id',
    options: { name: { ...NAME, description: 'the partner name' } },
    input: ({ values }) => ({ name: requireOption(values, 'name') }),
    local: (ctx, body) => createPartner(ctx, operatorCaller(), body),
    route: (body) => ({ post: '/partners', body }),
    present: createdId('partnerId'),
  }),
  'admin partner list': adminCommand({
    summary: 'list the partners, by name',
    columns: ['partnerId', 'name', 'createdAt'],
    input: () => undefined,
    read: (read) => read(PARTNERS, undefined),
    present: asItems,
  }),
  'admin enterprise create': adminCommand({
    summary: 'create an enterprise beneath a partner; prints its id',
    options: {
      partner: { type: 'string', value: 'ID', required: true, description: 'the partner it belongs to' },
      name: { ...NAME, description: 'the enterprise name' },
    },
    input: ({ values }) => ({ partnerId: requireOption(values, 'partner'), body: { name: requireOption(values, 'name') } }),
    local: (ctx, { partnerId, body }) => createEnterprise(ctx, operatorCaller(), partnerId, body),
    route: ({ partnerId, body }) => ({ post: ENTERPRISES.route(partnerId), body }),
    present: createdId('enterpriseId'),
  }),
  'admin enterprise list': adminCommand({
    summary: "list a partner's enterprises, by name",
    options: { partner: { type: 'string', value: 'ID', required: true, description: 'the partner' } },
    columns: ['enterpriseId', 'name', 'createdAt'],
    input: ({ values }) => requireOption(values, 'partner'),
    read: (read, partnerId) => read(ENTERPRISES, partnerId),
    present: asItems,
  }),
  'admin org create': adminCommand({
    summary: 'create an org beneath an enterprise, with its Uncategorized category; prints its id',
    options: {
      enterprise: { type: 'string', value: 'ID', required: true, description: 'the enterprise it belongs to' },
      name: { ...NAME, description: 'the org name' },
    },
    input: ({ values }) => ({ enterpriseId: requireOption(values, 'enterprise'), body: { name: requireOption(values, 'name') } }),
    local: (ctx, { enterpriseId, body }) => createOrg(ctx, operatorCaller(), enterpriseId, body),
    route: ({ enterpriseId, body }) => ({ post: ORGS.route(enterpriseId), body }),
    present: createdId('orgId'),
  }),
  'admin org list': adminCommand({
    summary: "list an enterprise's orgs, by name",
    options: { enterprise: { type: 'string', value: 'ID', required: true, description: 'the enterprise' } },
    columns: ['orgId', 'name', 'createdAt'],
    input: ({ values }) => requireOption(values, 'enterprise'),
    read: (read, enterpriseId) => read(ORGS, enterpriseId),
    present: asItems,
  }),
  'admin org update': adminCommand({
    summary: "change an org's name or its acknowledgement deadline",
    options: {
      org: ORG,
      name: { type: 'string', value: 'N', description: 'the new name' },
      'ack-deadline': {
        type: 'string',
        value: 'S|off',
        description: 'seconds (5..3600) base stations have to acknowledge each event before it is overdue; off turns it off',
      },
    },
    input: ({ values }) => {
      const changes: { name?: string; ackDeadlineSeconds?: number | null } = {};
      if (typeof values.name === 'string') changes.name = values.name;
      const deadline = values['ack-deadline'];
      if (typeof deadline === 'string') changes.ackDeadlineSeconds = deadline === 'off' ? null : /^\d+$/.test(deadline) ? Number(deadline) : Number.NaN;
      if (Object.keys(changes).length === 0) throw new UsageError('give --name or --ack-deadline');
      // Validated here by the service's own schema, so that a bad value is the same usage error in both modes.
      return { orgId: requireOption(values, 'org'), body: orgUpdateInput.parse(changes) };
    },
    local: (ctx, { orgId, body }) => updateOrg(ctx, operatorCaller(), orgId, body),
    route: ({ orgId, body }) => ({ patch: path`/orgs/${orgId}`, body }),
  }),
  'admin category create': adminCommand({
    summary: 'create an emergency category of an org; prints its id',
    options: { org: ORG, ...required(CATEGORY_OPTIONS, CATEGORY_REQUIRED) },
    // Validated here by the service's own schema, so that a bad value is the same usage error in both modes.
    input: ({ values }) => ({
      orgId: requireOption(values, 'org'),
      body: categoryCreateInput.parse(fields(values, CATEGORY_FIELDS, CATEGORY_REQUIRED)),
    }),
    local: (ctx, { orgId, body }) => createCategory(ctx, operatorCaller(), orgId, body),
    route: ({ orgId, body }) => ({ post: path`/orgs/${orgId}/categories`, body }),
    present: createdId('categoryId'),
  }),
  'admin category update': adminCommand({
    summary: "change a category's name, colour, severity or response level (Uncategorized cannot change)",
    positionals: [{ name: 'ID', description: 'the category id' }],
    options: { org: ORG, ...CATEGORY_OPTIONS },
    input: ({ values, positionals }) => ({
      orgId: requireOption(values, 'org'),
      categoryId: positionals[0]!,
      body: categoryUpdateInput.parse(fields(values, CATEGORY_FIELDS)),
    }),
    local: (ctx, { orgId, categoryId, body }) => updateCategory(ctx, operatorCaller(), orgId, categoryId, body),
    route: ({ orgId, categoryId, body }) => ({ patch: path`/orgs/${orgId}/categories/${categoryId}`, body }),
  }),
  'admin user create': adminCommand({
    summary: 'create a user of an org; prints its id',
    options: { org: ORG, ...required(USER_OPTIONS, USER_REQUIRED) },
    input: ({ values }) => ({ orgId: requireOption(values, 'org'), body: userCreateInput.parse(fields(values, USER_FIELDS, USER_REQUIRED)) }),
    local: (ctx, { orgId, body }) => createUser(ctx, operatorCaller(), orgId, body),
    route: ({ orgId, body }) => ({ post: path`/orgs/${orgId}/users`, body }),
    present: createdId('userId'),
  }),
  'admin user update': adminCommand({
    summary: "change a user's names, e-mail, phone, role, access level or status",
    positionals: [{ name: 'ID', description: 'the user id' }],
    options: {
      org: ORG,
      ...USER_OPTIONS,
      role: { ...USER_OPTIONS.role!, description: 'responder, user or visitor' },
      phone: { ...USER_OPTIONS.phone!, description: 'phone number ("" removes it)' },
      'access-level': { type: 'string', value: 'LEVEL', description: 'admin or member' },
      status: { type: 'string', value: 'STATUS', description: 'active, invited or disabled' },
    },
    input: ({ values, positionals }) => {
      const changes: Record<string, string | null> = fields(values, USER_FIELDS);
      if (changes.phoneNumber === '') changes.phoneNumber = null;
      return { orgId: requireOption(values, 'org'), userId: positionals[0]!, body: userUpdateInput.parse(changes) };
    },
    local: (ctx, { orgId, userId, body }) => updateUser(ctx, operatorCaller(), orgId, userId, body),
    route: ({ orgId, userId, body }) => ({ patch: path`/orgs/${orgId}/users/${userId}`, body }),
  }),
};
