import type { AppContext } from '../../context.js';
import { inTransaction, type Tx } from '../../db/connect.js';
import type { DrillRunTable, DrillTable } from '../../db/types.js';
import type { WriteOptions } from '../../db/unit-of-work.js';
import { AppError, fieldError } from '../../errors.js';
import { requireReach } from '../access/admin-scope.js';
import type { Caller } from '../access/principal.js';
import { recordAudit } from '../audit/record.js';
import { resolveCategory } from '../categories/service.js';
import { BY_CREATION, CURSOR_SHAPES, decodeCursor, keysetPage, paginate } from '../shared/cursor.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import type { Page } from '../shared/schema.js';
import { placeOfOrg } from '../tenancy/places.js';
import { findDrill, insertDrill, insertRun, runsOfDrill, updateDrill } from './repo.js';
import { newRun, reportOf, resolveAfterOf, startRun } from './runs.js';
import { validateSchedule } from './schedule.js';
import { type DrillChanges, drillChanges, type DrillInput, drillInput, type DrillRecord, type DrillRunRecord } from './schema.js';

export function toDrillRecord(row: DrillTable): DrillRecord {
  return {
    drillId: row.id,
    orgId: row.org_id,
    name: row.name,
    categoryId: row.category_id,
    description: row.description,
    schedule: row.schedule,
    ackDeadlineSeconds: Number(row.ack_deadline_seconds),
    resolveAfterSeconds: resolveAfterOf(row),
    nextRunAt: row.next_run_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The org (404 as for an unknown one when the caller's key does not reach it) and its drill (404 when it has none such). */
async function reachableDrill(tx: Pick<Tx, 'db'>, caller: Caller, orgId: string, drillId: string): Promise<DrillTable> {
  const place = await placeOfOrg(tx.db, orgId);
  requireReach(caller, place);
  const row = isUuid(drillId) ? await findDrill(tx.db, place.orgId, drillId.toLowerCase()) : undefined;
  if (!row) throw new AppError('not_found', `No drill ${drillId} in this organization.`);
  return row;
}

/**
 * Checks the settings together (a run lasts resolveAfterSeconds, which may not end before the deadline, and the schedule's
 * occurrences must be at least that far apart) and returns the next run time, null without a schedule.
 */
function nextRunOf(row: Pick<DrillTable, 'schedule' | 'ack_deadline_seconds' | 'resolve_after_seconds' | 'created_at'>): string | null {
  if (row.resolve_after_seconds !== null && row.resolve_after_seconds < row.ack_deadline_seconds) {
    throw fieldError(['body', 'resolveAfterSeconds'], 'must be at least ackDeadlineSeconds: the report is taken at the resolve');
  }
  if (row.schedule === null) return null;
  return validateSchedule(row.schedule, row.created_at, resolveAfterOf(row)).toISOString();
}

async function checkCategory(tx: Pick<Tx, 'db'>, orgId: string, categoryId: string | null | undefined): Promise<string | null> {
  if (categoryId === null || categoryId === undefined) return null;
  return (await resolveCategory(tx, orgId, { categoryId })).id;
}

export async function createDrill(ctx: AppContext, caller: Caller, orgId: string, raw: unknown, write: WriteOptions = {}): Promise<DrillRecord> {
  const input: DrillInput = drillInput.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      const now = nowIso();
      const row: DrillTable = {
        id: newId(),
        org_id: place.orgId,
        name: input.name,
        category_id: await checkCategory(tx, place.orgId, input.categoryId),
        description: input.description ?? null,
        schedule: input.schedule ?? null,
        ack_deadline_seconds: input.ackDeadlineSeconds,
        resolve_after_seconds: input.resolveAfterSeconds ?? null,
        next_run_at: null,
        created_at: now,
        updated_at: now,
        deleted_at: null,
      };
      row.next_run_at = nextRunOf(row);
      await insertDrill(tx, row);
      recordAudit(tx, caller, {
        orgId: place.orgId,
        eventCategory: 'drill',
        eventType: 'drill.created',
        resource: { type: 'drill', id: row.id },
        details: { name: row.name, schedule: row.schedule, ackDeadlineSeconds: row.ack_deadline_seconds, nextRunAt: row.next_run_at },
      });
      return toDrillRecord(row);
    },
    write.idempotency,
  );
}

export async function listDrills(ctx: AppContext, caller: Caller, orgId: string, params: { cursor?: string; limit: number }): Promise<Page<DrillRecord>> {
  const place = await placeOfOrg(ctx.db.db, orgId);
  requireReach(caller, place);
  const query = ctx.db.db.selectFrom('drills').selectAll().where('org_id', '=', place.orgId).where('deleted_at', 'is', null);
  return keysetPage(query, BY_CREATION, params, toDrillRecord);
}

export async function getDrill(ctx: AppContext, caller: Caller, orgId: string, drillId: string): Promise<DrillRecord> {
  return toDrillRecord(await reachableDrill(ctx.db, caller, orgId, drillId));
}

/** Changes a drill; a change of its schedule or its timings schedules its next run anew, from now. */
export async function changeDrill(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  drillId: string,
  raw: unknown,
  write: WriteOptions = {},
): Promise<DrillRecord> {
  const changes: DrillChanges = drillChanges.parse(raw);
  return inTransaction(
    ctx.db,
    async (tx) => {
      const current = await reachableDrill(tx, caller, orgId, drillId);
      const row: DrillTable = {
        ...current,
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.categoryId !== undefined ? { category_id: await checkCategory(tx, current.org_id, changes.categoryId) } : {}),
        ...(changes.description !== undefined ? { description: changes.description } : {}),
        ...(changes.schedule !== undefined ? { schedule: changes.schedule } : {}),
        ...(changes.ackDeadlineSeconds !== undefined ? { ack_deadline_seconds: changes.ackDeadlineSeconds } : {}),
        ...(changes.resolveAfterSeconds !== undefined ? { resolve_after_seconds: changes.resolveAfterSeconds } : {}),
        updated_at: nowIso(),
      };
      const timing = changes.schedule !== undefined || changes.ackDeadlineSeconds !== undefined || changes.resolveAfterSeconds !== undefined;
      if (timing) row.next_run_at = nextRunOf(row);
      await updateDrill(tx, current.org_id, current.id, row);
      recordAudit(tx, caller, {
        orgId: current.org_id,
        eventCategory: 'drill',
        eventType: 'drill.updated',
        resource: { type: 'drill', id: current.id },
        details: { changes, nextRunAt: row.next_run_at },
      });
      return toDrillRecord(row);
    },
    write.idempotency,
  );
}

/** Deletes a drill: it runs no more and leaves the lists; a run under way still completes and keeps its report. */
export async function deleteDrill(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  drillId: string,
  write: WriteOptions = {},
): Promise<{ drillId: string; deleted: true }> {
  return inTransaction(
    ctx.db,
    async (tx) => {
      const current = await reachableDrill(tx, caller, orgId, drillId);
      const now = nowIso();
      await updateDrill(tx, current.org_id, current.id, { deleted_at: now, updated_at: now, next_run_at: null });
      recordAudit(tx, caller, {
        orgId: current.org_id,
        eventCategory: 'drill',
        eventType: 'drill.deleted',
        resource: { type: 'drill', id: current.id },
        details: { name: current.name },
      });
      return { drillId: current.id, deleted: true as const };
    },
    write.idempotency,
  );
}

/**
 * Runs a drill now, outside its schedule: claims a run (409 while another run of the drill is under way, as a drill never
 * overlaps itself) and declares its exercise. The answer is the run as claimed; its report is at GET .../runs.
 */
export async function runDrillNow(ctx: AppContext, caller: Caller, orgId: string, drillId: string, write: WriteOptions = {}): Promise<DrillRunRecord> {
  let claimed: DrillRunTable | undefined;
  const record = await inTransaction(
    ctx.db,
    async (tx) => {
      const drill = await reachableDrill(tx, caller, orgId, drillId);
      const busy = await tx.db
        .selectFrom('drill_runs')
        .select('id')
        .where('drill_id', '=', drill.id)
        .where('status', 'in', ['starting', 'running'])
        .executeTakeFirst();
      if (busy) throw new AppError('conflict', `Run ${busy.id} of this drill is under way; a drill never overlaps itself.`, { runId: busy.id });
      const now = nowIso();
      const row = newRun(drill, now, now);
      await insertRun(tx, row);
      recordAudit(tx, caller, {
        orgId: drill.org_id,
        eventCategory: 'drill',
        eventType: 'drill.run',
        resource: { type: 'drill', id: drill.id },
        details: { runId: row.id },
      });
      claimed = row;
      return reportOf(tx.db, row);
    },
    write.idempotency,
  );
  // Declared once the claim committed; if this fails, the worker declares the stranded run at its next pass.
  // A replay of the request (its Idempotency-Key) claims nothing: the run it answers with was started the first time.
  if (claimed) await startRun(ctx, claimed).catch(() => undefined);
  return record;
}

/** The drill's runs, newest first, each with its report (as it stands while the run is under way). */
export async function listDrillRuns(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  drillId: string,
  params: { cursor?: string; limit: number },
): Promise<Page<DrillRunRecord>> {
  const drill = await reachableDrill(ctx.db, caller, orgId, drillId);
  const before = params.cursor ? (decodeCursor(params.cursor, CURSOR_SHAPES.byCreation) as [string, string]) : null;
  const rows = await runsOfDrill(ctx.db.db, drill.org_id, drill.id, before, params.limit);
  const now = Date.now();
  const reports = new Map<string, DrillRunRecord>();
  for (const row of rows.slice(0, params.limit)) reports.set(row.id, await reportOf(ctx.db.db, row, now));
  return paginate(
    rows,
    params.limit,
    (row) => reports.get(row.id)!,
    (row) => [row.created_at, row.id],
  );
}
