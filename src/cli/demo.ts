import type { AppContext } from '../context.js';
import { operatorCaller } from '../domain/access/principal.js';
import { createCategory } from '../domain/categories/service.js';
import { createAdminKey, revokeAdminKey } from '../domain/admin-keys/service.js';
import { createApiKey, revokeApiKey } from '../domain/keys/service.js';
import { createEnterprise, createOrg, createPartner } from '../domain/orgs/service.js';
import { createUser } from '../domain/users/service.js';

const DEMO_ORG_NAME = 'Demo Org';
/** With the demo org (API key) or the instance (admin key) as subject, these names mark the keys a demo start replaces. */
const DEMO_KEY_NAME = 'demo key';
const DEMO_ADMIN_KEY_NAME = 'demo admin key';

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
 * Creates (or reuses) the demo partner, enterprise and org with categories and users, then mints a fresh read+write key
 * and an instance admin key (keys are shown only once, so every run makes them) and revokes the ones earlier runs
 * minted, so that the demo leaves one usable pair, the one just printed. The new keys are minted first: a failure
 * between the two steps leaves an extra key (revoked by the next run), never none.
 */
export async function provisionDemoKeys(ctx: AppContext) {
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
    name: DEMO_KEY_NAME,
    subjectType: 'org',
    subjectId: ids.orgId,
    permissions: ['read', 'write'],
  });
  // An admin key of the whole instance, for the admin API (also minted afresh on every run).
  const admin = await createAdminKey(ctx, operatorCaller(), { name: DEMO_ADMIN_KEY_NAME, subject: { type: 'instance' } });
  const revoked = await revokePreviousDemoKeys(ctx, ids.orgId, { apiKeyId: key.id, adminKeyId: admin.adminKeyId });
  return { demo: { ...ids, keyId: key.id, key: key.key, adminKeyId: admin.adminKeyId, adminKey: admin.key }, revoked };
}

/** The demo org and its fresh keys (the previous demo keys revoked), as `admin demo` prints them. */
export async function provisionDemo(ctx: AppContext) {
  return (await provisionDemoKeys(ctx)).demo;
}

/** The demo keys of earlier runs still active, revoked through the key services (audit entries included). */
async function revokePreviousDemoKeys(ctx: AppContext, orgId: string, keep: { apiKeyId: string; adminKeyId: string }) {
  const apiKeys = await ctx.db.db
    .selectFrom('api_keys')
    .select('id')
    .where('name', '=', DEMO_KEY_NAME)
    .where('subject_type', '=', 'org')
    .where('subject_id', '=', orgId)
    .where('status', '=', 'active')
    .where('id', '!=', keep.apiKeyId)
    .execute();
  const adminKeys = await ctx.db.db
    .selectFrom('admin_keys')
    .select('id')
    .where('name', '=', DEMO_ADMIN_KEY_NAME)
    .where('subject_type', '=', 'instance')
    .where('status', '=', 'active')
    .where('id', '!=', keep.adminKeyId)
    .execute();
  for (const { id } of apiKeys) await revokeApiKey(ctx, operatorCaller(), id);
  for (const { id } of adminKeys) await revokeAdminKey(ctx, operatorCaller(), id);
  return { apiKeyIds: apiKeys.map((k) => k.id), adminKeyIds: adminKeys.map((k) => k.id) };
}

/**
 * `serve --demo` is for trying the service on one machine: webhooks to a receiver on this machine
 * (http://127.0.0.1:...) are accepted unless WEBHOOK_ALLOW_PRIVATE_TARGETS is set, to false, explicitly.
 */
export function withDemoDefaults(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const setting = env.WEBHOOK_ALLOW_PRIVATE_TARGETS;
  return setting === undefined || setting === '' ? { ...env, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } : env;
}
