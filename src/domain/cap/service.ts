import type { AppContext } from '../../context.js';
import { inTransaction, isUniqueViolation } from '../../db/connect.js';
import type { WriteOptions } from '../../db/unit-of-work.js';
import { AppError, fieldError } from '../../errors.js';
import { asBuffer } from '../../offload/outcome.js';
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
import { dropOriginals, keepOriginal, type MessageKey } from './originals.js';
import { relayedOriginals } from './relay-source.js';
import { type IngestedMsgType, ingestedMessagesOf, metadataWithMessage } from './chain.js';
import { emergenciesForFeed, emergencyForCap, feedStamp, mappingsByKey, mappingsOf, orgName, referencedEmergencies, transitionsOf } from './repo.js';
import { capEventKey, capMappingInput, type CapMappingRecord, MAX_CAP_MAPPINGS } from './schema.js';

/** The feed lists at most this many emergencies (the newest by occurredAt). */
export const FEED_MAX_ENTRIES = 500;
/** Resolved emergencies stay in the feed this long after their resolution was recorded. */
export const FEED_RESOLVED_WINDOW_MS = 24 * 60 * 60 * 1000;
/** The feed relays at most this many characters of ingested documents in all (see relayedOriginals). */
export const FEED_RELAY_BUDGET = 8 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------------------------------------
// Export

/** The emergency's latest state as a CAP 1.2 alert document (permission: emergencies:read; 404 like GET emergency), written on a worker thread. */
export async function emergencyCapDocument(ctx: AppContext, caller: Caller, orgId: string, emergencyId: string): Promise<string> {
  const org = authorizeCached(caller, orgId, 'emergencies:read') ?? (await authorize(ctx, caller, orgId, 'emergencies:read'));
  const row = isUuid(emergencyId) ? await emergencyForCap(ctx.db.db, org.id, emergencyId.toLowerCase()) : undefined;
  if (!row) throw emergencyNotFound(emergencyId);
  const transitions = await transitionsOf(ctx.db.db, org.id, [row.id]);
  const original = (await relayedOriginals(ctx.db.db, org.id, [row])).get(row.id) ?? null;
  const source = { row, transitions: transitions.get(row.id) ?? [], orgName: await orgName(ctx.db.db, org.id), original, sandbox: ctx.config.SANDBOX };
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
    const originals = await relayedOriginals(db, org.id, rows, FEED_RELAY_BUDGET);
    const leaves = rows.filter((r) => r.resolved_at !== null).map((r) => Date.parse(r.resolved_at!) + FEED_RESOLVED_WINDOW_MS);
    const source = {
      org: { id: org.id, name: stamp.name },
      rows,
      transitions,
      links,
      originals,
      now: new Date(now).toISOString(),
      sandbox: ctx.config.SANDBOX,
    };
    const xml = await ctx.offload.run(callerKey(caller), feedDocumentTask, source);
    return { xml, validUntil: Math.min(Number.POSITIVE_INFINITY, ...leaves) };
  });
  return asBuffer(xml);
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
  if (!INGESTED_STATUSES.includes(alert.status)) {
    throw fieldError(
      ['body', 'status'],
      `status ${alert.status} is not accepted: send Actual, or Exercise or Test (declared as an exercise)`,
      'cap_status_unsupported',
    );
  }
  // Exercise and Test are practice (extensions §11): never a real alarm.
  const exercise = alert.status !== 'Actual';
  const { info, categoryId } = await mappedInfo(ctx, org.id, alert.infos);
  const actor = { id: alert.sender.slice(0, 256), name: (info?.senderName || alert.sender).slice(0, 256) };
  const sent = isoOfSent(alert.sent);
  if (!isIngestible(alert.msgType)) {
    throw fieldError(['body', 'msgType'], `msgType ${alert.msgType} is not accepted: send Alert, Update or Cancel`, 'cap_msgtype_unsupported');
  }
  const msgType: IngestedMsgType = alert.msgType;
  // Refused before its document is kept: an Alert's sender and identifier must fit the externalId, an Update or Cancel must
  // name an emergency of the org.
  const declareInput = msgType === 'Alert' ? { ...declareInputOf(alert, info, categoryId, actor, sent), exercise } : null;
  const emergencyId = msgType === 'Alert' ? null : await referencedEmergencyId(ctx, org.id, alert.references);
  if (emergencyId !== null) await requireSameStatus(ctx, org.id, emergencyId, exercise);
  const key = { sender: alert.sender, identifier: alert.identifier };
  if (emergencyId !== null) {
    // A repeated Update or Cancel (a retry) is answered with the emergency as it is, rather than made a second transition.
    const repeated = await emergencyNamingMessage(ctx, org.id, emergencyId, key);
    if (repeated) return { emergency: repeated, status: 200 };
  }
  const kept = await keepOriginal(ctx.db.db, org.id, key, text);
  const named = (sequence: number) => ({ msgType, sender: alert.sender, identifier: alert.identifier, sent: alert.sent, sequence });
  const metadataAt = (current: EmergencyRecord['metadata'], sequence: number) =>
    metadataWithMessage(current, named(sequence), info ? clip(info.event, 256) : null);
  let result: IngestResult;
  try {
    if (declareInput) {
      result = { emergency: await declareEmergency(ctx, caller, org.id, { ...declareInput, metadata: metadataAt(null, 1) }, write), status: 201 };
    } else if (msgType === 'Update') {
      const category = categoryId ?? (await findCategory(ctx.db.db, org.id, {}))!.id;
      result = { emergency: await recategorizeEmergency(ctx, caller, org.id, emergencyId!, { categoryId: category, metadataAt }, write), status: 200 };
    } else {
      const note = clip(alert.note || info?.description || null, 4000);
      const resolveInput = { resolvedBy: actor, resolvedAt: sent, ...(note ? { resolutionNote: note } : {}), metadataAt };
      const { emergency, created } = await resolveEmergency(ctx, caller, org.id, emergencyId!, resolveInput, write);
      result = { emergency, status: created ? 201 : 200 };
    }
  } catch (err) {
    // A repeated Alert is refused because the emergency it declared exists: the kept document is that emergency's.
    if (kept && !(err instanceof AppError && err.code === 'external_id_conflict')) await dropOriginals(ctx.db.db, org.id, [key]);
    throw err;
  }
  await settleChain(ctx, org.id, result.emergency, key, kept);
  return result;
}

/** The CAP statuses ingested: Actual alerts, and Exercise and Test ones as exercises; System and Draft are not for people. */
const INGESTED_STATUSES = ['Actual', 'Exercise', 'Test'];

/** An Update or Cancel has the status of the alert it is about: an exercise never changes a real emergency, nor the reverse. */
async function requireSameStatus(ctx: AppContext, orgId: string, emergencyId: string, exercise: boolean): Promise<void> {
  const row = await emergencyForCap(ctx.db.db, orgId, emergencyId);
  if (row && (JSON.parse(row.record) as EmergencyRecord).exercise !== exercise) {
    throw fieldError(
      ['body', 'status'],
      exercise ? 'An Exercise or Test message cannot change a real emergency' : 'An Actual message cannot change an exercise: send it as Exercise',
      'cap_status_mismatch',
    );
  }
}

function isIngestible(msgType: string): msgType is IngestedMsgType {
  return msgType === 'Alert' || msgType === 'Update' || msgType === 'Cancel';
}

/** The emergency when its chain names the message already; undefined otherwise. */
async function emergencyNamingMessage(ctx: AppContext, orgId: string, emergencyId: string, key: MessageKey): Promise<EmergencyRecord | undefined> {
  const row = await emergencyForCap(ctx.db.db, orgId, emergencyId);
  if (!row) return undefined;
  const emergency = JSON.parse(row.record) as EmergencyRecord;
  return ingestedMessagesOf(emergency).some((m) => m.sender === key.sender && m.identifier === key.identifier) ? emergency : undefined;
}

/**
 * After an ingested message's transition: a message the emergency does not name (a Cancel of an emergency resolved before) has
 * its document removed, and once the emergency names a new message, the documents of its earlier messages are, since the export
 * relays the latest only.
 */
async function settleChain(ctx: AppContext, orgId: string, emergency: EmergencyRecord, key: MessageKey, kept: boolean): Promise<void> {
  const chain = ingestedMessagesOf(emergency);
  const latest = chain.at(-1);
  const isKey = (m: MessageKey) => m.sender === key.sender && m.identifier === key.identifier;
  if (!latest || !isKey(latest)) {
    if (kept && !chain.some(isKey)) await dropOriginals(ctx.db.db, orgId, [key]);
    return;
  }
  const earlier = chain.slice(0, -1).filter((m) => !isKey(m));
  await dropOriginals(ctx.db.db, orgId, earlier);
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
