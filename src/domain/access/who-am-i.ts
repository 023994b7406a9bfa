import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { countCoveredOrgs, coveredOrg, listCoveredOrgs } from '../orgs/covered.js';
import { uuid } from '../shared/schema.js';
import type { Caller } from './principal.js';
import { grantSchema } from './permissions.js';

/** Organizations listed in a "who am I" answer; past them, `orgsNextCursor` continues with GET /orgs. */
export const WHO_AM_I_ORGS = 200;

const SAMPLE_ORG = {
  orgId: '0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b6d',
  name: 'Northside Elementary',
  enterpriseId: '0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b6e',
  enterpriseName: 'Riverside School District',
  partnerId: '0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b6f',
  partnerName: 'Acme Safety',
};

export const whoAmIRecord = z
  .object({
    keyId: uuid.describe('The id of the key that authenticated this request.'),
    name: z.string().describe('The name the key was given when it was minted.'),
    kind: z.enum(['api_key', 'admin_key']),
    permissions: z
      .array(grantSchema)
      .describe('What the key may do in the organizations it covers: an API key its grants as given, an admin key always read and write.'),
    subject: z
      .object({
        type: z.enum(['instance', 'partner', 'enterprise', 'org']).describe('`instance` for admin keys of the whole instance only.'),
        id: uuid.optional().describe('Absent for `instance`.'),
      })
      .describe('Whom the key was minted for; it covers every organization beneath it (an API key: narrowed by its allowed orgs).'),
    orgs: z.array(coveredOrg).describe(`The organizations the key covers, by name then id: at most ${WHO_AM_I_ORGS}.`),
    orgsTotal: z.number().int().describe('How many organizations the key covers in all.'),
    orgsNextCursor: z
      .string()
      .nullable()
      .describe(`Null when \`orgs\` is complete; else pass it as \`cursor\` to the public API's GET /orgs for the organizations after these.`),
  })
  .meta({
    id: 'WhoAmI',
    description: 'The key that made the request: what it is, what it may do and which organizations it covers.',
    example: {
      keyId: '0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b70',
      name: 'Front desk console',
      kind: 'api_key',
      permissions: ['read', 'write'],
      subject: { type: 'enterprise', id: SAMPLE_ORG.enterpriseId },
      orgs: [SAMPLE_ORG],
      orgsTotal: 1,
      orgsNextCursor: null,
    },
  });
export type WhoAmI = z.infer<typeof whoAmIRecord>;

/**
 * `GET /me` on both APIs: the calling key itself, read from what authenticated the request (so a
 * console learns whether it may write, and where, without trying a write).
 */
export async function whoAmI(ctx: AppContext, caller: Caller): Promise<WhoAmI> {
  const principal = caller.principal;
  if (principal.kind === 'operator') throw new AppError('unauthenticated', 'A key is required: Authorization: Bearer enk_live_... or enk_adm_...');
  const [page, orgsTotal] = await Promise.all([listCoveredOrgs(ctx, caller, { limit: WHO_AM_I_ORGS }), countCoveredOrgs(ctx, caller)]);
  const common = { keyId: principal.keyId, name: principal.keyName, orgs: page.items, orgsTotal, orgsNextCursor: page.nextCursor };
  if (principal.kind === 'admin_key') {
    // An admin key reads and writes every organization beneath its subject (see authorize).
    return { ...common, kind: 'admin_key', permissions: ['read', 'write'], subject: principal.subject };
  }
  return { ...common, kind: 'api_key', permissions: [...principal.grants], subject: { type: principal.subjectType, id: principal.subjectId } };
}
