import { operatorCaller } from '../domain/access/principal.js';
import { createCategory } from '../domain/categories/service.js';
import { createEnterprise, createOrg, createPartner } from '../domain/orgs/service.js';
import { createUser } from '../domain/users/service.js';
import { type CliCommand, requireOption } from './command.js';

export const directoryCommands: Record<string, CliCommand> = {
  'admin partner create': {
    summary: 'create a partner; prints its id',
    options: { name: { type: 'string', value: 'N', required: true, description: 'the partner name' } },
    run: async ({ ctx, values }) => ({ id: (await createPartner(ctx, operatorCaller(), { name: requireOption(values, 'name') })).partnerId }),
  },
  'admin enterprise create': {
    summary: 'create an enterprise beneath a partner; prints its id',
    options: {
      partner: { type: 'string', value: 'ID', required: true, description: 'the partner it belongs to' },
      name: { type: 'string', value: 'N', required: true, description: 'the enterprise name' },
    },
    run: async ({ ctx, values }) => ({
      id: (await createEnterprise(ctx, operatorCaller(), requireOption(values, 'partner'), { name: requireOption(values, 'name') })).enterpriseId,
    }),
  },
  'admin org create': {
    summary: 'create an org beneath an enterprise, with its Uncategorized category; prints its id',
    options: {
      enterprise: { type: 'string', value: 'ID', required: true, description: 'the enterprise it belongs to' },
      name: { type: 'string', value: 'N', required: true, description: 'the org name' },
    },
    run: async ({ ctx, values }) => ({
      id: (await createOrg(ctx, operatorCaller(), requireOption(values, 'enterprise'), { name: requireOption(values, 'name') })).orgId,
    }),
  },
  'admin category create': {
    summary: 'create an emergency category of an org; prints its id',
    options: {
      org: { type: 'string', value: 'ID', required: true, description: 'the org' },
      name: { type: 'string', value: 'N', required: true, description: 'the category name (unique in the org, case-insensitively)' },
      color: { type: 'string', value: '"#RRGGBB"', required: true, description: 'display colour, e.g. "#D32F2F"' },
      severity: { type: 'string', value: '0..5', required: true, description: 'severity from 0 (lowest) to 5' },
      'response-level': {
        type: 'string',
        value: 'LEVEL',
        required: true,
        description: 'none, hold, secure, lockdown, evacuate, shelter or medical',
      },
    },
    run: async ({ ctx, values }) => ({
      id: (
        await createCategory(ctx, operatorCaller(), requireOption(values, 'org'), {
          name: requireOption(values, 'name'),
          color: requireOption(values, 'color'),
          severity: requireOption(values, 'severity'),
          responseLevel: requireOption(values, 'response-level'),
        })
      ).categoryId,
    }),
  },
  'admin user create': {
    summary: 'create a user of an org; prints its id',
    options: {
      org: { type: 'string', value: 'ID', required: true, description: 'the org' },
      'first-name': { type: 'string', value: 'F', required: true, description: 'first name' },
      'last-name': { type: 'string', value: 'L', required: true, description: 'last name' },
      email: { type: 'string', value: 'E', required: true, description: 'e-mail address' },
      role: { type: 'string', value: 'ROLE', description: 'responder, user (the default) or visitor' },
      phone: { type: 'string', value: 'P', description: 'phone number' },
    },
    run: async ({ ctx, values }) => ({
      id: (
        await createUser(ctx, operatorCaller(), requireOption(values, 'org'), {
          firstName: requireOption(values, 'first-name'),
          lastName: requireOption(values, 'last-name'),
          email: requireOption(values, 'email'),
          role: values.role,
          phoneNumber: values.phone,
        })
      ).userId,
    }),
  },
};
