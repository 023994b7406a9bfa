import type { AppContext } from '../context.js';
import { operatorCaller } from '../domain/access/principal.js';
import { createCategory } from '../domain/categories/service.js';
import { createAdminKey } from '../domain/admin-keys/service.js';
import { createApiKey } from '../domain/keys/service.js';
import { createEnterprise, createOrg, createPartner } from '../domain/orgs/service.js';
import { createUser } from '../domain/users/service.js';

const DEMO_ORG_NAME = 'Demo Org';

const DEMO_CATEGORIES = [
  { name: 'Fire', color: '#D32F2F', severity: 5, responseLevel: 'evacuate' },
  { name: 'Lockdown', color: '#B71C1C', severity: 5, responseLevel: 'lockdown' },
  { name: 'Severe Weather', color: '#F57C00', severity: 4, responseLevel: 'shelter' },
  { name: 'Medical', color: '#1976D2', severity: 3, responseLevel: 'medical' },
  { name: 'Hold', color: '#FBC02D', severity: 2, responseLevel: 'hold' },
];

const DEMO_USERS = [
  { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@demo.example', role: 'responder' },
  { firstName: 'Grace', lastName: 'Hopper', email: 'grace@demo.example', role: 'responder' },
  { firstName: 'Alan', lastName: 'Turing', email: 'alan@demo.example', role: 'user' },
];

/**
 * Creates (or reuses) the demo partner, enterprise and org with categories and users, then mints a fresh read+write key:
 * keys are shown only once, so every run makes one.
 */
export async function provisionDemo(ctx: AppContext) {
  const existing = await ctx.db.db.selectFrom('orgs').select(['id', 'enterprise_id', 'partner_id']).where('name', '=', DEMO_ORG_NAME).executeTakeFirst();
  let ids: { partnerId: string; enterpriseId: string; orgId: string };
  if (existing) {
    ids = { partnerId: existing.partner_id, enterpriseId: existing.enterprise_id, orgId: existing.id };
  } else {
    const operator = operatorCaller();
    const partner = await createPartner(ctx, operator, { name: 'Demo Partner' });
    const enterprise = await createEnterprise(ctx, operator, partner.partnerId, { name: 'Demo Enterprise' });
    const org = await createOrg(ctx, operator, enterprise.enterpriseId, { name: DEMO_ORG_NAME });
    for (const category of DEMO_CATEGORIES) await createCategory(ctx, operator, org.orgId, category);
    for (const user of DEMO_USERS) await createUser(ctx, operator, org.orgId, user);
    ids = { partnerId: partner.partnerId, enterpriseId: enterprise.enterpriseId, orgId: org.orgId };
  }
  const key = await createApiKey(ctx, operatorCaller(), {
    name: 'demo key',
    subjectType: 'org',
    subjectId: ids.orgId,
    permissions: ['read', 'write'],
  });
  // An admin key of the whole instance, for the admin API (also minted afresh on every run).
  const admin = await createAdminKey(ctx, operatorCaller(), { name: 'demo admin key', subject: { type: 'instance' } });
  return { ...ids, keyId: key.id, key: key.key, adminKeyId: admin.adminKeyId, adminKey: admin.key };
}
