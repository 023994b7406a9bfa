import type { WriteOptions } from '../../db/unit-of-work.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, type Tx } from '../../db/connect.js';
import { emergencyRecordById } from '../../db/reads.js';
import type { CategoryTable } from '../../db/types.js';
import type { EmergencyInsert, LockedEmergency, Writes } from '../../db/unit-of-work.js';
import { AppError } from '../../errors.js';
import { emergencyNotFound } from './not-found.js';
import { authorize, authorizeCached, requirePermission } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { principalActor, recordAudit } from '../audit/record.js';
import { resolveCategory } from '../categories/service.js';
import { ackDeadlineFor, recordAckDeadline } from '../deadlines/settings.js';
import { appendEvent } from '../../log/append.js';
import type { EventType } from '../../log/event-types.js';
import { CURSOR_SHAPES, decodeCursor, encodeCursor } from '../shared/cursor.js';
import { textsThatFit } from '../shared/page-bytes.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import { toJson } from '../shared/json.js';
import type { Actor, Page } from '../shared/schema.js';
import { eventDataJson } from './repo.js';
import type { DeclareInput, EmergencyRecord, ListEmergenciesQuery, RecategorizeInput, ResolveInput } from './schema.js';

function actorOf(caller: Caller, person: { id: string; name: string } | undefined): Actor {
  if (person) return { type: 'user', id: person.id, name: person.name };
  const principal = caller.principal;
  // An admin key on the public API acts as itself (extensions §5), as in the audit log; an OAuth client acts as its key.
  if (principal.kind !== 'operator') return { type: principal.kind, id: principal.keyId, name: principal.keyName };
  return { type: 'api_key', id: principalActor(principal).id, name: principal.name };
}

/**
 * Event, audit entry and acknowledgement deadline (when one applies) of one transition, recorded in its unit of work so that
 * they commit with the change or not at all.
 */
function recordTransition(
  writes: Writes,
  caller: Caller,
  change: { emergency: EmergencyRecord; recordJson: string; at: string; ackDeadline: number | null; sandbox: boolean },
  eventType: EventType,
  sequence: number,
  details: Record<string, unknown>,
): void {
  const { emergency } = change;
  const eventId = newId();
  recordAudit(writes, caller, {
    orgId: emergency.orgId,
    eventCategory: 'emergency',
    eventType,
    resource: { type: 'emergency', id: emergency.emergencyId },
    details: { eventId, sequence, ...details },
    occurredAt: change.at,
  });
  const event = appendEvent(writes, {
    eventId,
    orgId: emergency.orgId,
    emergencyId: emergency.emergencyId,
    eventType,
    sequence,
    data: { emergency, exercise: emergency.exercise },
    dataJson: eventDataJson(change.recordJson, emergency.exercise),
    createdAt: change.at,
    sandbox: change.sandbox,
  });
  recordAckDeadline(writes, event, change.ackDeadline);
}

/** The emergency locked for a change, with its current record; 404 when the org has no such emergency. */
async function lockedEmergency(tx: Tx, orgId: string, emergencyId: string): Promise<{ row: LockedEmergency; current: EmergencyRecord }> {
  const row = isUuid(emergencyId) ? await tx.emergencies.lockForChange(orgId, emergencyId.toLowerCase()) : undefined;
  if (!row) throw emergencyNotFound(emergencyId);
  return { row, current: JSON.parse(row.record) as EmergencyRecord };
}

/** What only the service itself asks of a declare: a drill's run declares with its own deadline, as the drill. */
export interface InternalDeclare {
  /** The acknowledgement deadline instead of the category's or the org's. */
  ackDeadlineSeconds?: number;
  /** Who declares, instead of the caller. */
  declaredBy?: Actor;
}

/** The record a declare returns and the emergencies row it writes. */
function declaredEmergency(
  caller: Caller,
  orgId: string,
  input: DeclareInput,
  category: CategoryTable,
  internal: InternalDeclare,
): { emergency: EmergencyRecord; row: EmergencyInsert } {
  const now = nowIso();
  const emergency: EmergencyRecord = {
    emergencyId: newId(),
    orgId,
    status: 'declared',
    externalId: input.externalId ?? null,
    category: { id: category.id, name: category.name, color: category.color, severity: category.severity },
    source: input.source ?? null,
    description: input.description ?? null,
    occurredAt: input.occurredAt ?? now,
    createdAt: now,
    resolvedAt: null,
    resolvedBy: null,
    declaredBy: internal.declaredBy ?? actorOf(caller, input.declaredBy),
    location: input.location
      ? { latitude: input.location.latitude ?? null, longitude: input.location.longitude ?? null, floorId: input.location.floorId ?? null }
      : null,
    resolutionNote: null,
    metadata: input.metadata ?? null,
    exercise: input.exercise ?? false,
  };
  const row = {
    id: emergency.emergencyId,
    org_id: orgId,
    status: emergency.status,
    external_id: emergency.externalId,
    category_id: category.id,
    source: emergency.source,
    description: emergency.description,
    occurred_at: emergency.occurredAt,
    created_at: now,
    updated_at: now,
    declared_by: JSON.stringify(emergency.declaredBy),
    location: toJson(input.location),
    metadata: toJson(input.metadata),
    sequence: 1,
    record: JSON.stringify(emergency),
    exercise: emergency.exercise ? 1 : 0,
  };
  return { emergency, row };
}

export async function declareEmergency(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  input: DeclareInput,
  write: WriteOptions = {},
  internal: InternalDeclare = {},
): Promise<EmergencyRecord> {
  await authorize(ctx, caller, orgId, 'emergencies:write');
  // Read outside the unit of work: categories are never changed or removed, and a committed one may
  // be cached at once, so the declare itself reads nothing and its writes can be batched.
  const category = await resolveCategory(ctx.db, orgId, input);
  const deadline = internal.ackDeadlineSeconds ?? ackDeadlineFor(ctx.db.db, orgId, category);
  const ackDeadline = deadline instanceof Promise ? await deadline : deadline;
  const { emergency, row } = declaredEmergency(caller, orgId, input, category, internal);
  try {
    await ctx.db.commit(
      (writes) => {
        writes.emergencies.insert(row);
        recordTransition(
          writes,
          caller,
          { emergency, recordJson: row.record, at: row.created_at, ackDeadline, sandbox: ctx.config.SANDBOX },
          'emergency.declared',
          1,
          {
            categoryId: category.id,
          },
        );
      },
      emergency,
      write.idempotency,
    );
  } catch (err) {
    if (input.externalId !== undefined && isUniqueViolation(err)) {
      const existing = await ctx.db.db
        .selectFrom('emergencies')
        .select('id')
        .where('org_id', '=', orgId)
        .where('external_id', '=', input.externalId)
        .executeTakeFirst();
      if (existing) {
        throw new AppError('external_id_conflict', `An emergency with externalId "${input.externalId}" already exists in this organization.`, {
          emergencyId: existing.id,
        });
      }
    }
    throw err;
  }
  return emergency;
}

/** One emergency as the JSON text of its stored record (written with every change), ready to send. */
export async function getEmergencyJson(ctx: AppContext, caller: Caller, orgId: string, emergencyId: string): Promise<string> {
  if (!authorizeCached(caller, orgId, 'emergencies:read')) await authorize(ctx, caller, orgId, 'emergencies:read');
  const record = isUuid(emergencyId) ? await emergencyRecordById(ctx.db, orgId, emergencyId.toLowerCase()) : undefined;
  if (record === undefined) throw emergencyNotFound(emergencyId);
  return record;
}

export async function getEmergency(ctx: AppContext, caller: Caller, orgId: string, emergencyId: string): Promise<EmergencyRecord> {
  return JSON.parse(await getEmergencyJson(ctx, caller, orgId, emergencyId)) as EmergencyRecord;
}

/** A page of emergencies, newest occurredAt first, as the JSON text of the response: the stored records joined. */
export async function listEmergenciesJson(ctx: AppContext, caller: Caller, orgId: string, params: ListEmergenciesQuery): Promise<string> {
  await authorize(ctx, caller, orgId, 'emergencies:read');
  let query = ctx.db.db.selectFrom('emergencies as e').select(['e.id', 'e.occurred_at', 'e.record']).where('e.org_id', '=', orgId);
  if (params.status) query = query.where('e.status', '=', params.status);
  if (params.categoryId) query = query.where('e.category_id', '=', params.categoryId.toLowerCase());
  if (params.externalId) query = query.where('e.external_id', '=', params.externalId);
  if (params.exercise !== undefined) query = query.where('e.exercise', '=', params.exercise ? 1 : 0);
  if (params.since) query = query.where('e.occurred_at', '>=', params.since);
  if (params.until) query = query.where('e.occurred_at', '<', params.until);
  if (params.cursor) {
    const [occurredAt, id] = decodeCursor(params.cursor, CURSOR_SHAPES.byOccurrence);
    query = query.where((eb) => eb.or([eb('e.occurred_at', '<', occurredAt!), eb.and([eb('e.occurred_at', '=', occurredAt!), eb('e.id', '<', id!)])]));
  }
  const rows = await query
    .orderBy('e.occurred_at', 'desc')
    .orderBy('e.id', 'desc')
    .limit(params.limit + 1)
    .execute();
  const hasMore = rows.length > params.limit;
  const fetched = hasMore ? rows.slice(0, params.limit) : rows;
  // A page also ends at PAGE_BYTES of records (extensions.md §9: no answer past 1 MiB).
  const records = fetched.map((r) => r.record ?? '');
  const pageRows = fetched.slice(0, textsThatFit(records));
  const items = pageRows.map((r) => r.record);
  const last = pageRows.at(-1);
  const nextCursor = (hasMore || pageRows.length < fetched.length) && last ? encodeCursor([last.occurred_at, last.id]) : null;
  return `{"items":[${items.join(',')}],"nextCursor":${JSON.stringify(nextCursor)}}`;
}

export async function listEmergencies(ctx: AppContext, caller: Caller, orgId: string, params: ListEmergenciesQuery): Promise<Page<EmergencyRecord>> {
  return JSON.parse(await listEmergenciesJson(ctx, caller, orgId, params)) as Page<EmergencyRecord>;
}

/**
 * What a service of another concept may add to a transition, written in its unit of work: ingested CAP messages are named in
 * the record's metadata by the event they became.
 */
export interface TransitionExtras {
  /** The record's metadata after the transition, from its current metadata and the transition's sequence. */
  metadataAt?: (current: EmergencyRecord['metadata'], sequence: number) => EmergencyRecord['metadata'];
}

/**
 * Moves the emergency to `categorized`; naming the category it already has while categorized changes and emits nothing, unless
 * the metadata changes with it (an ingested CAP Update is a new message even when its category is the same).
 */
export async function recategorizeEmergency(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  emergencyId: string,
  input: RecategorizeInput & TransitionExtras,
  write: WriteOptions = {},
): Promise<EmergencyRecord> {
  await authorize(ctx, caller, orgId, 'emergencies:write');
  return ctx.db.unitOfWork(async (tx) => {
    const { row, current } = await lockedEmergency(tx, orgId, emergencyId);
    if (row.status === 'resolved') {
      throw new AppError('emergency_resolved', 'This emergency is resolved; resolved emergencies cannot be changed.', {
        emergencyId: row.id,
      });
    }
    const category = await resolveCategory(tx, orgId, input);
    if (row.status === 'categorized' && row.category_id === category.id && !input.metadataAt) return current;
    const sequence = row.sequence + 1;
    const emergency: EmergencyRecord = {
      ...current,
      status: 'categorized',
      category: { id: category.id, name: category.name, color: category.color, severity: category.severity },
      ...(input.metadataAt ? { metadata: input.metadataAt(current.metadata, sequence) } : {}),
    };
    const change = {
      emergency,
      recordJson: JSON.stringify(emergency),
      at: nowIso(),
      ackDeadline: await ackDeadlineFor(tx.db, orgId, category),
      sandbox: ctx.config.SANDBOX,
    };
    tx.emergencies.update(orgId, row.id, { status: 'categorized', category_id: category.id, sequence, updated_at: change.at, record: change.recordJson });
    recordTransition(tx, caller, change, 'emergency.categorized', sequence, {
      previousCategoryId: row.category_id,
      categoryId: category.id,
    });
    return emergency;
  }, write.idempotency);
}

/**
 * `created` is false when the emergency was already resolved: REST answers that idempotently with the existing resolution,
 * the tool server reports it as an error. Either answer shows the record, so a key without the read permission gets 403
 * permission_denied instead.
 */
export async function resolveEmergency(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  emergencyId: string,
  input: ResolveInput & TransitionExtras,
  write: WriteOptions = {},
): Promise<{ emergency: EmergencyRecord; created: boolean }> {
  await authorize(ctx, caller, orgId, 'emergencies:write');
  return ctx.db.unitOfWork(async (tx) => {
    const { emergency, created } = await resolveInUnit(tx, caller, orgId, emergencyId, input, ctx.config.SANDBOX);
    return { emergency, created };
  }, write.idempotency);
}

/**
 * The resolve within a unit of work the caller holds (a drill's completion appends its report after it); the caller has been
 * authorized. Returns the emergency's sequence and stored record after it.
 */
export async function resolveInUnit(
  tx: Tx,
  caller: Caller,
  orgId: string,
  emergencyId: string,
  input: ResolveInput & TransitionExtras & { resolvedByActor?: Actor },
  /** A sandbox instance marks the event. */
  sandbox: boolean,
): Promise<{ emergency: EmergencyRecord; created: boolean; sequence: number; recordJson: string }> {
  const { row, current } = await lockedEmergency(tx, orgId, emergencyId);
  if (row.status === 'resolved') {
    // The answer is the record as resolved earlier, by anyone: reading it takes the read permission.
    requirePermission(caller, 'emergencies:read', `to be answered with emergency ${row.id}, which was resolved before`);
    return { emergency: current, created: false, sequence: row.sequence, recordJson: row.record };
  }
  const now = nowIso();
  const resolvedBy = input.resolvedByActor ?? actorOf(caller, input.resolvedBy);
  const resolvedAt = input.resolvedAt ?? now;
  const sequence = row.sequence + 1;
  tx.resolutions.insert({
    emergency_id: row.id,
    org_id: orgId,
    resolved_at: resolvedAt,
    resolved_by: JSON.stringify(resolvedBy),
    resolution_note: input.resolutionNote ?? null,
    metadata: toJson(input.metadata),
    created_at: now,
  });
  const emergency: EmergencyRecord = {
    ...current,
    status: 'resolved',
    resolvedAt,
    resolvedBy,
    resolutionNote: input.resolutionNote ?? null,
    ...(input.metadataAt ? { metadata: input.metadataAt(current.metadata, sequence) } : {}),
  };
  const category = await resolveCategory(tx, orgId, { categoryId: row.category_id });
  const change = { emergency, recordJson: JSON.stringify(emergency), at: now, ackDeadline: await ackDeadlineFor(tx.db, orgId, category), sandbox };
  tx.emergencies.update(orgId, row.id, { status: 'resolved', category_id: row.category_id, sequence, updated_at: now, record: change.recordJson });
  recordTransition(tx, caller, change, 'emergency.resolved', sequence, {
    ...(input.metadata ? { resolutionMetadata: input.metadata } : {}),
  });
  return { emergency, created: true, sequence, recordJson: change.recordJson };
}
