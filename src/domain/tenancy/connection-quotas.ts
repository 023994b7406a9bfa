import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { inTransaction } from '../../db/connect.js';
import type { WriteOptions } from '../../db/unit-of-work.js';
import { AppError } from '../../errors.js';
import { adminSubjectOf, requireInstance, requireReach } from '../access/admin-scope.js';
import type { Caller } from '../access/principal.js';
import { recordAudit } from '../audit/record.js';
import { nowIso } from '../shared/ids.js';
import { uuid } from '../shared/schema.js';
import { placeOfOrg, placeOfPartner } from './places.js';

/**
 * Connection quotas (extensions §13): how many device sockets and event streams one org, and all orgs of one
 * partner, may hold on one instance. The settings give the defaults; an admin gives an org or a partner its own.
 */

const QUOTA_MAX = 1_000_000;

const quotaValue = z.number().int('must be a whole number').min(0, 'must be at least 0').max(QUOTA_MAX, `must be at most ${QUOTA_MAX}`).nullable().optional();

/** `PATCH .../connection-quotas`: the quotas to set; null gives back the instance's default. */
export const connectionQuotasInput = z
  .strictObject({
    devices: quotaValue.describe('Device sockets (base stations) held at once on one instance; null: the default.'),
    streams: quotaValue.describe('Event streams (GET /orgs/{org_id}/stream) held at once on one instance; null: the default.'),
  })
  .refine((v) => v.devices !== undefined || v.streams !== undefined, 'name at least one of devices, streams');

const inForce = (what: string) => z.number().int().meta({ example: 200 }).describe(`${what} held at once on one instance: the quota in force.`);
const override = (setting: string) =>
  z.number().int().nullable().meta({ example: null }).describe(`The quota set by an admin; null: the instance's default (${setting}).`);

export const orgConnectionQuotasRecord = z
  .object({
    orgId: uuid,
    devices: inForce('Device sockets of the organization'),
    streams: inForce('Event streams of the organization'),
    devicesOverride: override('DEVICES_PER_ORG'),
    streamsOverride: override('STREAMS_PER_ORG'),
  })
  .meta({ id: 'OrgConnectionQuotas' });

export const partnerConnectionQuotasRecord = z
  .object({
    partnerId: uuid,
    devices: inForce("Device sockets of all the partner's organizations together"),
    streams: inForce("Event streams of all the partner's organizations together"),
    devicesOverride: override('DEVICES_PER_PARTNER'),
    streamsOverride: override('STREAMS_PER_PARTNER'),
  })
  .meta({ id: 'PartnerConnectionQuotas' });

export type OrgConnectionQuotas = z.infer<typeof orgConnectionQuotasRecord>;
export type PartnerConnectionQuotas = z.infer<typeof partnerConnectionQuotasRecord>;

type Overrides = { devices: number | null; streams: number | null };

const numberOrNull = (v: number | string | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

function orgRecordOf(ctx: AppContext, orgId: string, o: Overrides): OrgConnectionQuotas {
  return {
    orgId,
    devices: o.devices ?? ctx.config.DEVICES_PER_ORG,
    streams: o.streams ?? ctx.config.STREAMS_PER_ORG,
    devicesOverride: o.devices,
    streamsOverride: o.streams,
  };
}

function partnerRecordOf(ctx: AppContext, partnerId: string, o: Overrides): PartnerConnectionQuotas {
  return {
    partnerId,
    devices: o.devices ?? ctx.config.DEVICES_PER_PARTNER,
    streams: o.streams ?? ctx.config.STREAMS_PER_PARTNER,
    devicesOverride: o.devices,
    streamsOverride: o.streams,
  };
}

/** Quotas are set from above, so that a tenant cannot raise its own: an org's by its partner or the instance, a partner's by the instance. */
function requireOrgQuotaSetter(caller: Caller): void {
  if (adminSubjectOf(caller).type === 'enterprise') {
    throw new AppError('subject_not_covered', "An organization's connection quotas are set by an admin key of its partner or of the whole instance.");
  }
}

export async function getOrgConnectionQuotas(ctx: AppContext, caller: Caller, orgId: string): Promise<OrgConnectionQuotas> {
  const place = await placeOfOrg(ctx.db.db, orgId);
  requireReach(caller, place);
  const row = await ctx.db.db.selectFrom('org_connection_quotas').select(['devices', 'streams']).where('org_id', '=', place.orgId).executeTakeFirst();
  return orgRecordOf(ctx, place.orgId, { devices: numberOrNull(row?.devices), streams: numberOrNull(row?.streams) });
}

/** Sets an org's own quotas (null: back to the default), with an audit entry in its log; in force at once here, within seconds elsewhere. */
export async function updateOrgConnectionQuotas(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  raw: unknown,
  write: WriteOptions = {},
): Promise<OrgConnectionQuotas> {
  const input = connectionQuotasInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      requireOrgQuotaSetter(caller);
      const before = await tx.db.selectFrom('org_connection_quotas').select(['devices', 'streams']).where('org_id', '=', place.orgId).executeTakeFirst();
      const previous = { devices: numberOrNull(before?.devices), streams: numberOrNull(before?.streams) };
      const next = {
        devices: input.devices === undefined ? previous.devices : input.devices,
        streams: input.streams === undefined ? previous.streams : input.streams,
      };
      const at = nowIso();
      await tx.db
        .insertInto('org_connection_quotas')
        .values({ org_id: place.orgId, ...next, updated_at: at })
        .onConflict((oc) => oc.column('org_id').doUpdateSet({ ...next, updated_at: at }))
        .execute();
      recordAudit(tx, caller, {
        orgId: place.orgId,
        eventCategory: 'org',
        eventType: 'org.connection_quotas_updated',
        resource: { type: 'org', id: place.orgId },
        details: { devices: next.devices, streams: next.streams, previousDevices: previous.devices, previousStreams: previous.streams },
      });
      tx.afterCommit(() => forgetConnectionQuotas({ orgId: place.orgId }));
      return orgRecordOf(ctx, place.orgId, next);
    },
    write.idempotency,
  );
}

export async function getPartnerConnectionQuotas(ctx: AppContext, caller: Caller, partnerId: string): Promise<PartnerConnectionQuotas> {
  const place = await placeOfPartner(ctx.db.db, partnerId);
  requireReach(caller, place);
  const row = await ctx.db.db
    .selectFrom('partner_connection_quotas')
    .select(['devices', 'streams'])
    .where('partner_id', '=', place.partnerId)
    .executeTakeFirst();
  return partnerRecordOf(ctx, place.partnerId, { devices: numberOrNull(row?.devices), streams: numberOrNull(row?.streams) });
}

/** Sets a partner's own quotas over all its orgs (instance admin keys only); in force at once here, within seconds elsewhere. */
export async function updatePartnerConnectionQuotas(
  ctx: AppContext,
  caller: Caller,
  partnerId: string,
  raw: unknown,
  write: WriteOptions = {},
): Promise<PartnerConnectionQuotas> {
  const input = connectionQuotasInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfPartner(tx.db, partnerId);
      requireReach(caller, place);
      requireInstance(caller);
      const before = await tx.db
        .selectFrom('partner_connection_quotas')
        .select(['devices', 'streams'])
        .where('partner_id', '=', place.partnerId)
        .executeTakeFirst();
      const next = {
        devices: input.devices === undefined ? numberOrNull(before?.devices) : input.devices,
        streams: input.streams === undefined ? numberOrNull(before?.streams) : input.streams,
      };
      const at = nowIso();
      await tx.db
        .insertInto('partner_connection_quotas')
        .values({ partner_id: place.partnerId, ...next, updated_at: at })
        .onConflict((oc) => oc.column('partner_id').doUpdateSet({ ...next, updated_at: at }))
        .execute();
      tx.afterCommit(() => forgetConnectionQuotas({ partnerId: place.partnerId }));
      return partnerRecordOf(ctx, place.partnerId, next);
    },
    write.idempotency,
  );
}

/** An org's place and the quotas in force for one kind of connection: its own and its partner's. */
export interface TenantQuota {
  orgId: string;
  partnerId: string;
  org: number;
  partner: number;
}

interface StoredQuotas {
  partnerId: string;
  org: Overrides;
  partner: Overrides;
  readAt: number;
}

/**
 * Every device upgrade and stream needs its org's quotas: they are cached briefly per instance, as the
 * acknowledgement-deadline setting is, so admitting a connection reads the database at most once per
 * org and period. A change made here applies at once, one made on another instance once the entry expires.
 */
const QUOTAS_TTL_MS = 5_000;
const quotaCache = new LRUCache<string, StoredQuotas>({ max: 100_000 });

async function readQuotas(ctx: AppContext, orgId: string): Promise<StoredQuotas | null> {
  const row = await ctx.db.db
    .selectFrom('orgs')
    .leftJoin('org_connection_quotas', 'org_connection_quotas.org_id', 'orgs.id')
    .leftJoin('partner_connection_quotas', 'partner_connection_quotas.partner_id', 'orgs.partner_id')
    .select([
      'orgs.partner_id',
      'org_connection_quotas.devices as org_devices',
      'org_connection_quotas.streams as org_streams',
      'partner_connection_quotas.devices as partner_devices',
      'partner_connection_quotas.streams as partner_streams',
    ])
    .where('orgs.id', '=', orgId)
    .executeTakeFirst();
  if (!row) return null;
  const stored: StoredQuotas = {
    partnerId: row.partner_id,
    org: { devices: numberOrNull(row.org_devices), streams: numberOrNull(row.org_streams) },
    partner: { devices: numberOrNull(row.partner_devices), streams: numberOrNull(row.partner_streams) },
    readAt: Date.now(),
  };
  quotaCache.set(orgId, stored);
  return stored;
}

function quotaOf(ctx: AppContext, kind: 'devices' | 'streams', orgId: string, stored: StoredQuotas): TenantQuota {
  const defaults =
    kind === 'devices'
      ? { org: ctx.config.DEVICES_PER_ORG, partner: ctx.config.DEVICES_PER_PARTNER }
      : { org: ctx.config.STREAMS_PER_ORG, partner: ctx.config.STREAMS_PER_PARTNER };
  return { orgId, partnerId: stored.partnerId, org: stored.org[kind] ?? defaults.org, partner: stored.partner[kind] ?? defaults.partner };
}

/** The quotas in force for the org's device sockets or streams (null for an org that does not exist); a value, not a promise, when cached. */
export function tenantQuotaOf(ctx: AppContext, kind: 'devices' | 'streams', orgId: string): TenantQuota | null | Promise<TenantQuota | null> {
  const cached = quotaCache.get(orgId);
  if (cached && Date.now() - cached.readAt <= QUOTAS_TTL_MS) return quotaOf(ctx, kind, orgId, cached);
  return readQuotas(ctx, orgId).then((stored) => (stored ? quotaOf(ctx, kind, orgId, stored) : null));
}

/** After an org's or a partner's quotas changed (and committed): the next connection reads them again. */
function forgetConnectionQuotas(changed: { orgId?: string; partnerId?: string }): void {
  if (changed.orgId) quotaCache.delete(changed.orgId);
  if (changed.partnerId) {
    const orgIds = [...quotaCache.entries()].filter(([, stored]) => stored.partnerId === changed.partnerId).map(([orgId]) => orgId);
    for (const orgId of orgIds) quotaCache.delete(orgId);
  }
}
