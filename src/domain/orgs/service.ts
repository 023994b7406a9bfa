import type { WriteOptions } from '../../db/unit-of-work.js';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { inTransaction } from '../../db/connect.js';
import type { EnterpriseTable, OrgTable, PartnerTable } from '../../db/types.js';
import { newStreamColumns } from '../../log/append.js';
import { adminSubjectOf, requireInstance, requireReach } from '../access/admin-scope.js';
import type { Caller } from '../access/principal.js';
import { recordAudit } from '../audit/record.js';
import { insertCategory, UNCATEGORIZED } from '../categories/service.js';
import { ackDeadlineSeconds } from '../deadlines/schema.js';
import { forgetOrgAckDeadline } from '../deadlines/settings.js';
import { CURSOR_SHAPES, keysetPage } from '../shared/cursor.js';
import { newId, nowIso } from '../shared/ids.js';
import { type Page, pageOf, timestamp, uuid } from '../shared/schema.js';
import { placeOfEnterprise, placeOfOrg, placeOfPartner } from '../tenancy/places.js';

/** Partners, enterprises and organizations: the tenancy tree, administered by the CLI and the admin API alike. */

export const nameInput = z.strictObject({ name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters') });

export const partnerRecord = z.object({ partnerId: uuid, name: z.string(), createdAt: timestamp }).meta({ id: 'Partner' });
export const enterpriseRecord = z.object({ enterpriseId: uuid, partnerId: uuid, name: z.string(), createdAt: timestamp }).meta({ id: 'Enterprise' });
export const orgRecord = z
  .object({
    orgId: uuid,
    enterpriseId: uuid,
    name: z.string(),
    createdAt: timestamp,
    ackDeadlineSeconds: z
      .number()
      .int()
      .nullable()
      .meta({ example: 30 })
      .describe('Seconds its base stations have to acknowledge an emergency event before an emergency.delivery_overdue; null: no deadline.'),
  })
  .meta({ id: 'OrganizationRecord' });

/** `PATCH /orgs/{org_id}`: what may change of an organization. */
export const orgUpdateInput = z
  .strictObject({
    name: nameInput.shape.name.optional(),
    ackDeadlineSeconds: ackDeadlineSeconds
      .optional()
      .describe(
        'Seconds (5..3600) its base stations have to acknowledge each emergency event (declared, categorized, resolved) before an ' +
          'emergency.delivery_overdue is appended; the event is sent again half-way to the devices that have not acknowledged it. ' +
          'null turns deadlines off. A category may override it.',
      ),
  })
  .refine((v) => Object.keys(v).length > 0, 'name at least one of name, ackDeadlineSeconds');
export const partnerPage = pageOf(partnerRecord);
export const enterprisePage = pageOf(enterpriseRecord);
export const orgPage = pageOf(orgRecord);
export type PartnerRecord = z.infer<typeof partnerRecord>;
export type EnterpriseRecord = z.infer<typeof enterpriseRecord>;
export type OrgRecord = z.infer<typeof orgRecord>;

const toPartner = (r: PartnerTable): PartnerRecord => ({ partnerId: r.id, name: r.name, createdAt: r.created_at });
const toEnterprise = (r: EnterpriseTable): EnterpriseRecord => ({ enterpriseId: r.id, partnerId: r.partner_id, name: r.name, createdAt: r.created_at });
const ORG_COLUMNS = ['id', 'enterprise_id', 'name', 'created_at', 'ack_deadline_seconds'] as const;

const toOrg = (r: Pick<OrgTable, (typeof ORG_COLUMNS)[number]>): OrgRecord => ({
  orgId: r.id,
  enterpriseId: r.enterprise_id,
  name: r.name,
  createdAt: r.created_at,
  ackDeadlineSeconds: r.ack_deadline_seconds === null ? null : Number(r.ack_deadline_seconds),
});

type PageParams = { cursor?: string; limit: number };

/** Every tenancy list is ordered by name, then id. */
const BY_NAME = { sort: 'name', keyOf: (r: { name: string; id: string }): [string, string] => [r.name, r.id], cursor: CURSOR_SHAPES.byName };

/** Only keys of the whole instance create partners. */
export async function createPartner(ctx: AppContext, caller: Caller, raw: unknown, write: WriteOptions = {}): Promise<PartnerRecord> {
  requireInstance(caller);
  const { name } = nameInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const row: PartnerTable = { id: newId(), name, created_at: nowIso() };
      await tx.db.insertInto('partners').values(row).execute();
      return toPartner(row);
    },
    write.idempotency,
  );
}

/** The partners the caller's subject reaches (all, or its own). */
export async function listPartners(ctx: AppContext, caller: Caller, params: PageParams): Promise<Page<PartnerRecord>> {
  const subject = adminSubjectOf(caller);
  if (subject.type === 'enterprise') return { items: [], nextCursor: null };
  let query = ctx.db.db.selectFrom('partners').selectAll();
  if (subject.type === 'partner') query = query.where('id', '=', subject.id);
  return keysetPage(query, BY_NAME, params, toPartner);
}

export async function createEnterprise(ctx: AppContext, caller: Caller, partnerId: string, raw: unknown, write: WriteOptions = {}): Promise<EnterpriseRecord> {
  const { name } = nameInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfPartner(tx.db, partnerId);
      requireReach(caller, place);
      const row: EnterpriseTable = { id: newId(), partner_id: place.partnerId, name, created_at: nowIso() };
      await tx.db.insertInto('enterprises').values(row).execute();
      return toEnterprise(row);
    },
    write.idempotency,
  );
}

/** The enterprises of a partner the caller reaches; an enterprise key sees its own only. */
export async function listEnterprises(ctx: AppContext, caller: Caller, partnerId: string, params: PageParams): Promise<Page<EnterpriseRecord>> {
  const place = await placeOfPartner(ctx.db.db, partnerId);
  const subject = adminSubjectOf(caller);
  if (subject.type !== 'enterprise') requireReach(caller, place);
  let query = ctx.db.db.selectFrom('enterprises').selectAll().where('partner_id', '=', place.partnerId);
  if (subject.type === 'enterprise') query = query.where('id', '=', subject.id);
  return keysetPage(query, BY_NAME, params, toEnterprise);
}

/** Creates an organization together with its system category Uncategorized. */
export async function createOrg(ctx: AppContext, caller: Caller, enterpriseId: string, raw: unknown, write: WriteOptions = {}): Promise<OrgRecord> {
  const { name } = nameInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfEnterprise(tx.db, enterpriseId);
      requireReach(caller, place);
      const row: OrgTable = {
        id: newId(),
        enterprise_id: place.enterpriseId!,
        partner_id: place.partnerId,
        name,
        created_at: nowIso(),
        ...newStreamColumns(),
        ack_deadline_seconds: null,
      };
      await tx.db.insertInto('orgs').values(row).execute();
      await insertCategory(tx, { orgId: row.id, ...UNCATEGORIZED, isSystem: true });
      return toOrg(row);
    },
    write.idempotency,
  );
}

export async function listOrgs(ctx: AppContext, caller: Caller, enterpriseId: string, params: PageParams): Promise<Page<OrgRecord>> {
  requireReach(caller, await placeOfEnterprise(ctx.db.db, enterpriseId));
  const query = ctx.db.db.selectFrom('orgs').select(ORG_COLUMNS).where('enterprise_id', '=', enterpriseId.toLowerCase());
  return keysetPage(query, BY_NAME, params, toOrg);
}

export async function getOrg(ctx: AppContext, caller: Caller, orgId: string): Promise<OrgRecord> {
  const place = await placeOfOrg(ctx.db.db, orgId);
  requireReach(caller, place);
  return toOrg(await ctx.db.db.selectFrom('orgs').select(ORG_COLUMNS).where('id', '=', place.orgId).executeTakeFirstOrThrow());
}

/**
 * Renames an organization or sets its acknowledgement deadline (null: off), with an audit entry in the org's log. A new
 * deadline applies to events written from then on: at once on this instance, within a few seconds on others.
 */
export async function updateOrg(ctx: AppContext, caller: Caller, orgId: string, raw: unknown, write: WriteOptions = {}): Promise<OrgRecord> {
  const input = orgUpdateInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      const row = await tx.db.selectFrom('orgs').select(ORG_COLUMNS).where('id', '=', place.orgId).executeTakeFirstOrThrow();
      const changes = {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.ackDeadlineSeconds !== undefined ? { ack_deadline_seconds: input.ackDeadlineSeconds } : {}),
      };
      await tx.db.updateTable('orgs').set(changes).where('id', '=', place.orgId).execute();
      recordAudit(tx, caller, {
        orgId: place.orgId,
        eventCategory: 'org',
        eventType: 'org.updated',
        resource: { type: 'org', id: place.orgId },
        details: {
          ...(input.name !== undefined ? { name: input.name, previousName: row.name } : {}),
          ...(input.ackDeadlineSeconds !== undefined
            ? {
                ackDeadlineSeconds: input.ackDeadlineSeconds,
                previousAckDeadlineSeconds: row.ack_deadline_seconds === null ? null : Number(row.ack_deadline_seconds),
              }
            : {}),
        },
      });
      tx.afterCommit(() => forgetOrgAckDeadline(place.orgId));
      return toOrg({ ...row, ...changes });
    },
    write.idempotency,
  );
}
