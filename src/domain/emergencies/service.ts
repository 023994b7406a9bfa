import type { AppContext } from '../../context.js';
import { inTransaction, isUniqueViolation, type Tx } from '../../db/connect.js';
import { preparedQuery } from '../../db/prepared.js';
import type { CategoryTable } from '../../db/types.js';
import { AppError } from '../../errors.js';
import { emergencyNotFound } from './not-found.js';
import { authorize, authorizeCached } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { auditRow, principalActor, recordAudit } from '../audit/record.js';
import { resolveCategory } from '../categories/service.js';
import { appendEvent, type EmergencyEventType, eventRow } from '../events/append.js';
import { decodeCursor, encodeCursor } from '../shared/cursor.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import { toJson } from '../shared/json.js';
import type { Actor, Page } from '../shared/schema.js';
import { pgDeclareBatcher } from './pg-declare-batch.js';
import { currentRecord, eventDataJson, recordJsonOf, selectEmergencies, toEmergencyRecord, type EmergencyRow } from './repo.js';
import type { DeclareInput, EmergencyRecord, ListEmergenciesQuery, RecategorizeInput, ResolveInput } from './schema.js';

function actorOf(caller: Caller, person: { id: string; name: string } | undefined): Actor {
  if (person) return { type: 'user', id: person.id, name: person.name };
  const actor = principalActor(caller.principal);
  return { type: 'api_key', id: actor.id, name: actor.name };
}

/**
 * Event and audit entry of one transition, written in the transaction that made it. The audit entry
 * goes first: taking the event offset locks the org row until commit (see appendEvent), so the fewer
 * statements after it, the shorter concurrent writers of the org wait on PostgreSQL.
 */
async function recordTransition(
  ctx: AppContext,
  tx: Tx,
  caller: Caller,
  change: { emergency: EmergencyRecord; recordJson: string; at: string },
  eventType: EmergencyEventType,
  sequence: number,
  details: Record<string, unknown>,
): Promise<void> {
  const { emergency } = change;
  const eventId = newId();
  await recordAudit(tx, caller, {
    orgId: emergency.orgId,
    eventCategory: 'emergency',
    eventType,
    resource: { type: 'emergency', id: emergency.emergencyId },
    details: { eventId, sequence, ...details },
    occurredAt: change.at,
  });
  await appendEvent(tx, ctx.bus, {
    eventId,
    orgId: emergency.orgId,
    emergencyId: emergency.emergencyId,
    eventType,
    sequence,
    data: { emergency },
    dataJson: eventDataJson(change.recordJson),
    createdAt: change.at,
  });
}

const emergencyById = preparedQuery((db, p) =>
  selectEmergencies(db).where('e.org_id', '=', p('org_id')).where('e.id', '=', p('id')),
);
// Serializes concurrent transitions of one emergency on PostgreSQL; SQLite transactions are already serial.
const emergencyByIdForUpdate = preparedQuery((db, p) =>
  selectEmergencies(db).where('e.org_id', '=', p('org_id')).where('e.id', '=', p('id')).forUpdate('e'),
);

const insertEmergency = preparedQuery((db, p) =>
  db.insertInto('emergencies').values({
    id: p('id'),
    org_id: p('org_id'),
    status: p('status'),
    external_id: p('external_id'),
    category_id: p('category_id'),
    source: p('source'),
    description: p('description'),
    occurred_at: p('occurred_at'),
    created_at: p('created_at'),
    updated_at: p('updated_at'),
    declared_by: p('declared_by'),
    location: p('location'),
    metadata: p('metadata'),
    sequence: p('sequence'),
    record: p('record'),
    record_sequence: p('sequence'),
  }),
);

async function findEmergencyRow(
  tx: Pick<Tx, 'db' | 'dialect'>,
  orgId: string,
  emergencyId: string,
  forUpdate: boolean,
): Promise<EmergencyRow> {
  if (!isUuid(emergencyId)) throw emergencyNotFound(emergencyId);
  const query = forUpdate && tx.dialect === 'postgres' ? emergencyByIdForUpdate : emergencyById;
  const [row] = await query.execute(tx, { org_id: orgId, id: emergencyId.toLowerCase() });
  if (!row) throw emergencyNotFound(emergencyId);
  return row;
}


/** The record a declare returns and the emergencies row it writes. */
function declaredEmergency(caller: Caller, orgId: string, input: DeclareInput, category: CategoryTable) {
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
    declaredBy: actorOf(caller, input.declaredBy),
    location: input.location
      ? { latitude: input.location.latitude ?? null, longitude: input.location.longitude ?? null, floorId: input.location.floorId ?? null }
      : null,
    resolutionNote: null,
    metadata: input.metadata ?? null,
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
  };
  return { emergency, row };
}

/**
 * PostgreSQL: a declare's whole transaction is one statement (emergency, audit entry, offset, event,
 * wake-up), written together with the org's other declares waiting at the same moment (see
 * PgDeclareBatcher).
 */
async function declareOnPostgres(ctx: AppContext, caller: Caller, orgId: string, input: DeclareInput): Promise<EmergencyRecord> {
  // A read outside any transaction sees committed rows only, so the category may be cached at once.
  const category = await resolveCategory({ db: ctx.db.db, dialect: ctx.db.dialect, afterCommit: (cb) => cb() }, orgId, input);
  const { emergency, row } = declaredEmergency(caller, orgId, input, category);
  const eventId = newId();
  const audit = auditRow(caller, {
    orgId,
    eventCategory: 'emergency',
    eventType: 'emergency.declared',
    resource: { type: 'emergency', id: emergency.emergencyId },
    occurredAt: row.created_at,
    details: { eventId, sequence: 1, categoryId: category.id },
  });
  const event = eventRow({
    eventId,
    orgId,
    emergencyId: emergency.emergencyId,
    eventType: 'emergency.declared',
    sequence: 1,
    data: { emergency },
    dataJson: eventDataJson(row.record),
    createdAt: row.created_at,
  });
  const offset = await pgDeclareBatcher(ctx.db).declare(orgId, { emergency: row, audit, event: event.row });
  ctx.bus.committed({ orgId, offset });
  return emergency;
}

export async function declareEmergency(ctx: AppContext, caller: Caller, orgId: string, input: DeclareInput): Promise<EmergencyRecord> {
  await authorize(ctx, caller, orgId, 'write');
  try {
    if (ctx.db.dialect === 'postgres') return await declareOnPostgres(ctx, caller, orgId, input);
    return await inTransaction(ctx.db, async (tx) => {
      const category = await resolveCategory(tx, orgId, input);
      const { emergency, row } = declaredEmergency(caller, orgId, input, category);
      await insertEmergency.execute(tx, row);
      await recordTransition(ctx, tx, caller, { emergency, recordJson: row.record, at: row.created_at }, 'emergency.declared', 1, {
        categoryId: category.id,
      });
      return emergency;
    });
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
}

const storedRecordById = preparedQuery((db, p) =>
  db.selectFrom('emergencies').select(['record', 'record_sequence', 'sequence']).where('org_id', '=', p('org_id')).where('id', '=', p('id')),
);

/**
 * One emergency as the JSON text of its record, ready to send: the stored record when it is current
 * (see migration 0007), else built from the row, its category and its resolution.
 */
export async function getEmergencyJson(ctx: AppContext, caller: Caller, orgId: string, emergencyId: string): Promise<string> {
  if (!authorizeCached(caller, orgId, 'read')) await authorize(ctx, caller, orgId, 'read');
  if (!isUuid(emergencyId)) throw emergencyNotFound(emergencyId);
  const [stored] = await storedRecordById.execute(ctx.db, { org_id: orgId, id: emergencyId.toLowerCase() });
  if (!stored) throw emergencyNotFound(emergencyId);
  return currentRecord(stored) ?? recordJsonOf(await findEmergencyRow(ctx.db, orgId, emergencyId, false));
}

export async function getEmergency(ctx: AppContext, caller: Caller, orgId: string, emergencyId: string): Promise<EmergencyRecord> {
  return JSON.parse(await getEmergencyJson(ctx, caller, orgId, emergencyId)) as EmergencyRecord;
}

/**
 * A page of emergencies, newest occurredAt first, as the JSON text of the response: the stored
 * records as they are (see migration 0007), rows whose record is stale built from their columns.
 */
export async function listEmergenciesJson(ctx: AppContext, caller: Caller, orgId: string, params: ListEmergenciesQuery): Promise<string> {
  await authorize(ctx, caller, orgId, 'read');
  let query = ctx.db.db
    .selectFrom('emergencies as e')
    .select(['e.id', 'e.occurred_at', 'e.record', 'e.record_sequence', 'e.sequence'])
    .where('e.org_id', '=', orgId);
  if (params.status) query = query.where('e.status', '=', params.status);
  if (params.categoryId) query = query.where('e.category_id', '=', params.categoryId.toLowerCase());
  if (params.externalId) query = query.where('e.external_id', '=', params.externalId);
  if (params.since) query = query.where('e.occurred_at', '>=', params.since);
  if (params.until) query = query.where('e.occurred_at', '<', params.until);
  if (params.cursor) {
    const [occurredAt, id] = decodeCursor(params.cursor, ['string', 'string']) as string[];
    query = query.where((eb) =>
      eb.or([eb('e.occurred_at', '<', occurredAt!), eb.and([eb('e.occurred_at', '=', occurredAt!), eb('e.id', '<', id!)])]),
    );
  }
  const rows = await query.orderBy('e.occurred_at', 'desc').orderBy('e.id', 'desc').limit(params.limit + 1).execute();
  const hasMore = rows.length > params.limit;
  const pageRows = hasMore ? rows.slice(0, params.limit) : rows;
  const stale = pageRows.filter((r) => currentRecord(r) === null).map((r) => r.id);
  const rebuilt = new Map<string, string>();
  if (stale.length > 0) {
    const full = await selectEmergencies(ctx.db.db).where('e.org_id', '=', orgId).where('e.id', 'in', stale).execute();
    for (const row of full) rebuilt.set(row.id, recordJsonOf(row));
  }
  const items = pageRows.flatMap((r) => {
    const json = rebuilt.get(r.id) ?? r.record;
    return json === null ? [] : [json];
  });
  const last = pageRows.at(-1);
  const nextCursor = hasMore && last ? encodeCursor([last.occurred_at, last.id]) : null;
  return `{"items":[${items.join(',')}],"nextCursor":${JSON.stringify(nextCursor)}}`;
}

export async function listEmergencies(ctx: AppContext, caller: Caller, orgId: string, params: ListEmergenciesQuery): Promise<Page<EmergencyRecord>> {
  return JSON.parse(await listEmergenciesJson(ctx, caller, orgId, params)) as Page<EmergencyRecord>;
}

/**
 * Moves the emergency to `categorized` under the named category. Naming the category it already has
 * while categorized changes nothing and emits nothing.
 */
export async function recategorizeEmergency(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  emergencyId: string,
  input: RecategorizeInput,
): Promise<EmergencyRecord> {
  await authorize(ctx, caller, orgId, 'write');
  return inTransaction(ctx.db, async (tx) => {
    const row = await findEmergencyRow(tx, orgId, emergencyId, true);
    if (row.status === 'resolved') {
      throw new AppError('emergency_resolved', 'This emergency is resolved; resolved emergencies cannot be changed.', {
        emergencyId: row.id,
      });
    }
    const category = await resolveCategory(tx, orgId, input);
    if (row.status === 'categorized' && row.category_id === category.id) return toEmergencyRecord(row);
    const sequence = row.sequence + 1;
    const emergency = toEmergencyRecord({
      ...row,
      status: 'categorized',
      category_id: category.id,
      category_name: category.name,
      category_color: category.color,
      category_severity: category.severity,
      sequence,
    });
    const change = { emergency, recordJson: JSON.stringify(emergency), at: nowIso() };
    await tx.db
      .updateTable('emergencies')
      .set({ status: 'categorized', category_id: category.id, sequence, updated_at: change.at, record: change.recordJson, record_sequence: sequence })
      .where('id', '=', row.id)
      .where('org_id', '=', orgId)
      .execute();
    await recordTransition(ctx, tx, caller, change, 'emergency.categorized', sequence, {
      previousCategoryId: row.category_id,
      categoryId: category.id,
    });
    return emergency;
  });
}

/**
 * Resolves the emergency. `created` is false when it was already resolved: REST answers that
 * idempotently with the existing resolution, the tool server reports it as an error.
 */
export async function resolveEmergency(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  emergencyId: string,
  input: ResolveInput,
): Promise<{ emergency: EmergencyRecord; created: boolean }> {
  await authorize(ctx, caller, orgId, 'write');
  return inTransaction(ctx.db, async (tx) => {
    const row = await findEmergencyRow(tx, orgId, emergencyId, true);
    if (row.status === 'resolved') return { emergency: toEmergencyRecord(row), created: false };
    const now = nowIso();
    const resolvedBy = actorOf(caller, input.resolvedBy);
    const resolvedAt = input.resolvedAt ?? now;
    const sequence = row.sequence + 1;
    await tx.db
      .insertInto('emergency_resolutions')
      .values({
        emergency_id: row.id,
        org_id: orgId,
        resolved_at: resolvedAt,
        resolved_by: JSON.stringify(resolvedBy),
        resolution_note: input.resolutionNote ?? null,
        metadata: toJson(input.metadata),
        created_at: now,
      })
      .execute();
    const emergency = toEmergencyRecord({
      ...row,
      status: 'resolved',
      resolved_at: resolvedAt,
      resolved_by: JSON.stringify(resolvedBy),
      resolution_note: input.resolutionNote ?? null,
      sequence,
    });
    const change = { emergency, recordJson: JSON.stringify(emergency), at: now };
    await tx.db
      .updateTable('emergencies')
      .set({ status: 'resolved', sequence, updated_at: now, record: change.recordJson, record_sequence: sequence })
      .where('id', '=', row.id)
      .where('org_id', '=', orgId)
      .execute();
    await recordTransition(ctx, tx, caller, change, 'emergency.resolved', sequence, {
      ...(input.metadata ? { resolutionMetadata: input.metadata } : {}),
    });
    return { emergency, created: true };
  });
}
