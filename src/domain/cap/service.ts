import type { AppContext } from '../../context.js';
import { inTransaction, isUniqueViolation } from '../../db/connect.js';
import type { WriteOptions } from '../../db/unit-of-work.js';
import { AppError, fieldError } from '../../errors.js';
import { requireReach } from '../access/admin-scope.js';
import { authorize, authorizeCached } from '../access/authorize.js';
import { callerKey } from '../access/caller-key.js';
import type { Caller } from '../access/principal.js';
import { recordAudit } from '../audit/record.js';
import { resolveCategory } from '../categories/service.js';
import { findCategory } from '../categories/repo.js';
import { emergencyNotFound } from '../emergencies/not-found.js';
import type { DeclareInput, EmergencyRecord } from '../emergencies/schema.js';
import { declareEmergency, recategorizeEmergency, resolveEmergency } from '../emergencies/service.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import { isStorableTime, STORED_TIME_RANGE } from '../shared/schema.js';
import { placeOfOrg } from '../tenancy/places.js';
import type { CapLinks } from './atom-feed.js';
import { alertDocumentTask, feedDocumentTask } from './documents.js';
import { feedCacheOf } from './feed-cache.js';
import { capSenderOf, emergencyIdOfIdentifier } from './messages.js';
import { type CapReference, type IncomingAlert, type IncomingInfo, readCapAlertTask } from './read-alert.js';
import { emergenciesForFeed, emergencyForCap, feedStamp, mappingsByKey, mappingsOf, orgName, referencedEmergencies, transitionsOf } from './repo.js';
import { capEventKey, capMappingInput, type CapMappingRecord, MAX_CAP_MAPPINGS } from './schema.js';

/** The feed lists at most this many emergencies (the newest by occurredAt). */
export const FEED_MAX_ENTRIES = 500;
/** Resolved emergencies stay in the feed this long after their resolution was recorded. */
export const FEED_RESOLVED_WINDOW_MS = 24 * 60 * 60 * 1000;

// ---------------------------------------------------------------------------------------------------------------------------
// Export

/** The emergency's latest state as a CAP 1.2 alert document (permission: emergencies:read; 404 like GET emergency), written on a worker thread. */
export async function emergencyCapDocument(ctx: AppContext, caller: Caller, orgId: string, emergencyId: string): Promise<string> {
  const org = authorizeCached(caller, orgId, 'emergencies:read') ?? (await authorize(ctx, caller, orgId, 'emergencies:read'));
  const row = isUuid(emergencyId) ? await emergencyForCap(ctx.db.db, org.id, emergencyId.toLowerCase()) : undefined;
  if (!row) throw emergencyNotFound(emergencyId);
  const transitions = await transitionsOf(ctx.db.db, org.id, [row.id]);
  const source = { row, transitions: transitions.get(row.id) ?? [], orgName: await orgName(ctx.db.db, org.id) };
  return ctx.offload.run(callerKey(caller), alertDocumentTask, source);
}

/**
 * The organization's Atom feed of CAP alerts: every open emergency and every one resolved in the last 24 h, newest occurredAt
 * first, at most FEED_MAX_ENTRIES (permission: emergencies:read), as UTF-8. Built on a worker thread, and served again from the cache while the
 * org's stream head (every change of an emergency) and name are unchanged and no resolved emergency has left the window.
 */
export async function capFeedDocument(ctx: AppContext, caller: Caller, orgId: string, links: CapLinks, now = Date.now()): Promise<Buffer> {
  const org = await authorize(ctx, caller, orgId, 'emergencies:read');
  const db = ctx.db.db;
  const stamp = await feedStamp(db, org.id);
  const xml = await feedCacheOf(ctx).get(org.id, stamp, now, async () => {
    const rows = await emergenciesForFeed(db, org.id, new Date(now - FEED_RESOLVED_WINDOW_MS).toISOString(), FEED_MAX_ENTRIES);
    const transitions = await transitionsOf(
      db,
      org.id,
      rows.map((r) => r.id),
    );
    const leaves = rows.filter((r) => r.resolved_at !== null).map((r) => Date.parse(r.resolved_at!) + FEED_RESOLVED_WINDOW_MS);
    const source = { org: { id: org.id, name: stamp.name }, rows, transitions, links, now: new Date(now).toISOString() };
    const xml = await ctx.offload.run(callerKey(caller), feedDocumentTask, source);
    return { xml, validUntil: Math.min(Number.POSITIVE_INFINITY, ...leaves) };
  });
  return Buffer.from(xml.buffer, xml.byteOffset, xml.byteLength);
}

// ---------------------------------------------------------------------------------------------------------------------------
// Ingest

export interface IngestResult {
  emergency: EmergencyRecord;
  /** The status of the REST operation the alert became: 201 declared or resolved now, 200 re-categorized or already resolved. */
  status: 200 | 201;
}

/**
 * Ingests another system's CAP 1.2 alert (permission: emergencies:write) through the operations REST uses: Alert → declare (externalId
 * `sender,identifier`; a repeat is a 409 external_id_conflict), Update → re-categorize and Cancel → resolve the emergency its
 * `references` name. The category is the organization's mapping of the alert's `event`, else Uncategorized.
 */
export async function ingestCapAlert(ctx: AppContext, caller: Caller, orgId: string, text: string, write: WriteOptions = {}): Promise<IngestResult> {
  const org = await authorize(ctx, caller, orgId, 'emergencies:write');
  const alert = await ctx.offload.run(callerKey(caller), readCapAlertTask, text);
  if (alert.status !== 'Actual') {
    throw fieldError(
      ['body', 'status'],
      `status ${alert.status} is not accepted: this service has no exercise or test mode, only Actual alerts are ingested`,
      'cap_status_unsupported',
    );
  }
  const { info, categoryId } = await mappedInfo(ctx, org.id, alert.infos);
  const actor = { id: alert.sender.slice(0, 256), name: (info?.senderName || alert.sender).slice(0, 256) };
  const sent = isoOfSent(alert.sent);
  switch (alert.msgType) {
    case 'Alert': {
      const emergency = await declareEmergency(ctx, caller, org.id, declareInputOf(alert, info, categoryId, actor, sent), write);
      return { emergency, status: 201 };
    }
    case 'Update': {
      const emergencyId = await referencedEmergencyId(ctx, org.id, alert.references);
      const category = categoryId ?? (await findCategory(ctx.db.db, org.id, {}))!.id;
      return { emergency: await recategorizeEmergency(ctx, caller, org.id, emergencyId, { categoryId: category }, write), status: 200 };
    }
    case 'Cancel': {
      const emergencyId = await referencedEmergencyId(ctx, org.id, alert.references);
      const note = clip(alert.note || info?.description || null, 4000);
      const { emergency, created } = await resolveEmergency(
        ctx,
        caller,
        org.id,
        emergencyId,
        { resolvedBy: actor, resolvedAt: sent, ...(note ? { resolutionNote: note } : {}) },
        write,
      );
      return { emergency, status: created ? 201 : 200 };
    }
    default:
      throw fieldError(['body', 'msgType'], `msgType ${alert.msgType} is not accepted: send Alert, Update or Cancel`, 'cap_msgtype_unsupported');
  }
}

/** The `info` that decides the category (the first whose event the org maps, else the first) and the category it maps to. */
async function mappedInfo(ctx: AppContext, orgId: string, infos: IncomingInfo[]): Promise<{ info: IncomingInfo | undefined; categoryId: string | undefined }> {
  const keys = infos.map((i) => capEventKey(i.event)).filter((k) => k.length <= 256);
  const mapped = new Map((await mappingsByKey(ctx.db.db, orgId, [...new Set(keys)])).map((m) => [m.event_key, m.category_id]));
  const info = infos.find((i) => mapped.has(capEventKey(i.event)));
  return info ? { info, categoryId: mapped.get(capEventKey(info.event)) } : { info: infos[0], categoryId: undefined };
}

function declareInputOf(
  alert: IncomingAlert,
  info: IncomingInfo | undefined,
  categoryId: string | undefined,
  actor: { id: string; name: string },
  sent: string,
): DeclareInput {
  const externalId = `${alert.sender},${alert.identifier}`;
  if (externalId.length > 256) {
    throw fieldError(['body', 'identifier'], 'sender and identifier together must be at most 255 characters: they become the externalId', 'too_long');
  }
  const location = info?.location ?? null;
  const description = clip(info?.description || info?.headline || null, 4000);
  return {
    externalId,
    ...(categoryId ? { categoryId } : {}),
    source: 'cap',
    ...(description ? { description } : {}),
    occurredAt: sent,
    ...(location ? { location } : {}),
    metadata: {
      cap: { sender: alert.sender, identifier: alert.identifier, sent: alert.sent, ...(info ? { event: clip(info.event, 256) } : {}) },
    },
    declaredBy: actor,
  };
}

/**
 * The emergency an Update or Cancel is about: the first of its references that names an emergency of the org, by externalId
 * (`sender,identifier` of an ingested Alert) or, for this service's own alerts, by the identifier it gave them.
 */
async function referencedEmergencyId(ctx: AppContext, orgId: string, refs: CapReference[]): Promise<string> {
  if (refs.length === 0) {
    throw fieldError(
      ['body', 'references'],
      'An Update or Cancel names the alert it is about in references (sender,identifier,sent)',
      'cap_references_missing',
    );
  }
  const ownSender = capSenderOf(orgId);
  const ownId = (ref: CapReference) => (ref.sender === ownSender ? emergencyIdOfIdentifier(ref.identifier) : null);
  const externalIdOf = (ref: CapReference) => `${ref.sender},${ref.identifier}`;
  const rows = await referencedEmergencies(ctx.db.db, orgId, {
    externalIds: refs.map(externalIdOf).filter((e) => e.length <= 256),
    ids: refs.map(ownId).filter((id): id is string => id !== null),
  });
  for (const ref of refs) {
    const row = rows.find((r) => r.id === ownId(ref) || r.external_id === externalIdOf(ref));
    if (row) return row.id;
  }
  throw new AppError(
    'emergency_not_found',
    'No emergency of this organization is named by the references of this alert (an ingested Alert is found by its sender,identifier).',
  );
}

/** `sent` as the service stores times (UTC, milliseconds): it becomes occurredAt, so it must lie in the years 1970..9999 too. */
function isoOfSent(sent: string): string {
  const ms = Date.parse(sent);
  if (Number.isNaN(ms) || !isStorableTime(ms)) throw fieldError(['body', 'sent'], `sent ${sent} ${STORED_TIME_RANGE}`, 'cap_invalid');
  return new Date(ms).toISOString();
}

function clip(text: string | null, max: number): string | null {
  return text === null ? null : text.length > max ? text.slice(0, max) : text;
}

// ---------------------------------------------------------------------------------------------------------------------------
// The per-org mapping of CAP events to categories (admin API)

function toMappingRecord(
  orgId: string,
  row: { id: string; event: string; category_id: string; category_name: string; created_at: string; updated_at: string },
) {
  return {
    mappingId: row.id,
    orgId,
    event: row.event,
    categoryId: row.category_id,
    categoryName: row.category_name,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  } satisfies CapMappingRecord;
}

export async function listCapMappings(ctx: AppContext, caller: Caller, orgId: string): Promise<{ items: CapMappingRecord[] }> {
  const place = await placeOfOrg(ctx.db.db, orgId);
  requireReach(caller, place);
  return { items: (await mappingsOf(ctx.db.db, place.orgId)).map((row) => toMappingRecord(place.orgId, row)) };
}

/** Maps a CAP event to a category of the org, replacing an earlier mapping of the same event (`created` false then). */
export async function setCapMapping(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  raw: unknown,
  write: WriteOptions = {},
): Promise<{ mapping: CapMappingRecord; created: boolean }> {
  const input = capMappingInput.parse(raw);
  try {
    return await inTransaction(
      ctx.db,
      async (tx) => {
        const place = await placeOfOrg(tx.db, orgId);
        requireReach(caller, place);
        const category = await resolveCategory(tx, place.orgId, input);
        const key = capEventKey(input.event);
        const now = nowIso();
        const existing = await tx.db
          .selectFrom('cap_event_mappings')
          .selectAll()
          .where('org_id', '=', place.orgId)
          .where('event_key', '=', key)
          .executeTakeFirst();
        let row = existing;
        if (existing) {
          await tx.db
            .updateTable('cap_event_mappings')
            .set({ event: input.event, category_id: category.id, updated_at: now })
            .where('id', '=', existing.id)
            .where('org_id', '=', place.orgId)
            .execute();
          row = { ...existing, event: input.event, category_id: category.id, updated_at: now };
        } else {
          const count = await tx.db
            .selectFrom('cap_event_mappings')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('org_id', '=', place.orgId)
            .executeTakeFirstOrThrow();
          if (Number(count.n) >= MAX_CAP_MAPPINGS) {
            throw new AppError('conflict', `The organization already has ${MAX_CAP_MAPPINGS} CAP event mappings; delete one first.`);
          }
          row = { id: newId(), org_id: place.orgId, event_key: key, event: input.event, category_id: category.id, created_at: now, updated_at: now };
          await tx.db.insertInto('cap_event_mappings').values(row).execute();
        }
        recordAudit(tx, caller, {
          orgId: place.orgId,
          eventCategory: 'cap_mapping',
          eventType: 'cap_mapping.set',
          resource: { type: 'cap_mapping', id: row!.id },
          details: { event: input.event, categoryId: category.id, previousCategoryId: existing?.category_id ?? null },
        });
        return { mapping: toMappingRecord(place.orgId, { ...row!, category_name: category.name }), created: !existing };
      },
      write.idempotency,
    );
  } catch (err) {
    if (isUniqueViolation(err)) throw new AppError('conflict', 'The mapping of this event was changed at the same time; send the request again.');
    throw err;
  }
}

export async function deleteCapMapping(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  mappingId: string,
  write: WriteOptions = {},
): Promise<{ mappingId: string; deleted: true }> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      const row = isUuid(mappingId)
        ? await tx.db
            .selectFrom('cap_event_mappings')
            .selectAll()
            .where('org_id', '=', place.orgId)
            .where('id', '=', mappingId.toLowerCase())
            .executeTakeFirst()
        : undefined;
      if (!row) throw new AppError('not_found', `No CAP event mapping ${mappingId} in this organization.`);
      await tx.db.deleteFrom('cap_event_mappings').where('id', '=', row.id).where('org_id', '=', place.orgId).execute();
      recordAudit(tx, caller, {
        orgId: place.orgId,
        eventCategory: 'cap_mapping',
        eventType: 'cap_mapping.deleted',
        resource: { type: 'cap_mapping', id: row.id },
        details: { event: row.event, categoryId: row.category_id },
      });
      return { mappingId: row.id, deleted: true as const };
    },
    write.idempotency,
  );
}
