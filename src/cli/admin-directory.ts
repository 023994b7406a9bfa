import { operatorCaller } from '../domain/access/principal.js';
import { createCategory } from '../domain/categories/service.js';
import { createEnterprise, createOrg, createPartner } from '../domain/orgs/service.js';
import { createUser } from '../domain/users/service.js';
import { type CliCommand, requireOption } from './command.js';

export const directoryCommands: Record<string, CliCommand> = {
  'admin partner create': {
    usage: '--name N',
    options: { name: { type: 'string' } },
    run: async ({ ctx, values }) => ({ id: (await createPartner(ctx, operatorCaller(), { name: requireOption(values, 'name') })).partnerId }),
  },
  'admin enterprise create': {
    usage: '--partner ID --name N',
    options: { partner: { type: 'string' }, name: { type: 'string' } },
    run: async ({ ctx, values }) => ({
      id: (await createEnterprise(ctx, operatorCaller(), requireOption(values, 'partner'), { name: requireOption(values, 'name') })).enterpriseId,
    }),
  },
  'admin org create': {
    usage: '--enterprise ID --name N   (creates its Uncategorized category)',
    options: { enterprise: { type: 'string' }, name: { type: 'string' } },
    run: async ({ ctx, values }) => ({
      id: (await createOrg(ctx, operatorCaller(), requireOption(values, 'enterprise'), { name: requireOption(values, 'name') })).orgId,
    }),
  },
  'admin category create': {
    usage: '--org ID --name N --color "#D32F2F" --severity 0..5 --response-level none|hold|secure|lockdown|evacuate|shelter|medical',
    options: {
      org: { type: 'string' },
      name: { type: 'string' },
      color: { type: 'string' },
      severity: { type: 'string' },
      'response-level': { type: 'string' },
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
    usage: '--org ID --first-name F --last-name L --email E [--role responder|user|visitor] [--phone P]',
    options: {
      org: { type: 'string' },
      'first-name': { type: 'string' },
      'last-name': { type: 'string' },
      email: { type: 'string' },
      role: { type: 'string' },
      phone: { type: 'string' },
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
