import type { AppContext } from '../../context.js';
import type { DbHandle, Tx } from '../../db/connect.js';
import type { DrillRunTable, DrillTable } from '../../db/types.js';
import { AppError } from '../../errors.js';
import { appendEvent } from '../../log/append.js';
import { DRILL_COMPLETED } from '../../log/event-types.js';
import { emergencyEvents } from '../../log/reads.js';
import { type Caller, operatorCaller } from '../access/principal.js';
import { declareEmergency, resolveInUnit } from '../emergencies/service.js';
import { newId } from '../shared/ids.js';
import type { Actor } from '../shared/schema.js';
import { type MeasuredEvent, measureRun } from './report.js';
import { drillById, dueDrills, insertRun, markCompleted, markRunning, moveNextRun, runsToComplete, startingRuns } from './repo.js';
import { latestOccurrence, occurrenceAfter, parseSchedule } from './schedule.js';
import { CATCH_UP_MS, type DrillRunRecord, RESOLVE_AFTER_DEADLINE_SECONDS } from './schema.js';

/**
 * A drill's runs, from the claim of a scheduled time to the report. Each step is settled in the database so that it happens
 * once across restarts and instances: the claim moves the drill's next run time by compare-and-set and writes a run row
 * unique per (drill, time); the declare is idempotent by its externalId `drill:<runId>`; the completion moves the run from
 * `running` to `completed` by compare-and-set in the unit of work that resolves the exercise and appends drill.completed.
 */

/** Drills claimed, and runs started or completed, per pass of the worker. */
export const RUNS_PER_PASS = 20;

/** The operator principal a drill acts as: the audit log names it `drill`. */
const drillCaller: Caller = operatorCaller('drill');

const drillActor = (drill: Pick<DrillTable, 'id' | 'name'>): Actor => ({ type: 'drill', id: drill.id, name: drill.name });

/** The seconds from the declare to the resolve: the drill's own, or its deadline plus 30 s. */
export function resolveAfterOf(drill: Pick<DrillTable, 'ack_deadline_seconds' | 'resolve_after_seconds'>): number {
  return drill.resolve_after_seconds ?? Number(drill.ack_deadline_seconds) + RESOLVE_AFTER_DEADLINE_SECONDS;
}

/** A new run row for `scheduledFor`, claimed and not yet declared. */
export function newRun(drill: Pick<DrillTable, 'id' | 'org_id'>, scheduledFor: string, at: string): DrillRunTable {
  return {
    id: newId(),
    drill_id: drill.id,
    org_id: drill.org_id,
    scheduled_for: scheduledFor,
    status: 'starting',
    emergency_id: null,
    event_id: null,
    started_at: null,
    resolve_at: null,
    completed_at: null,
    report: null,
    created_at: at,
  };
}

/** Whether the drill already has a run for this time (a schedule changed back to an occurrence that ran). */
async function hasRunFor(tx: Pick<Tx, 'db'>, drillId: string, scheduledFor: string): Promise<boolean> {
  const row = await tx.db.selectFrom('drill_runs').select('id').where('drill_id', '=', drillId).where('scheduled_for', '=', scheduledFor).executeTakeFirst();
  return row !== undefined;
}

/** What a claim pass did, for the worker's log. */
export interface ClaimOutcome {
  claimed: DrillRunTable[];
  /** Occurrences found more than an hour late (missed while no process ran): skipped. */
  skipped: { drillId: string; scheduledFor: string }[];
  more: boolean;
}

/**
 * Claims the due occurrences of scheduled drills. A drill's due time is moved to its next occurrence after now by
 * compare-and-set, so only one claimer wins each time; the winner writes the run row in the same transaction. Catch-up:
 * of the occurrences missed since the due time, the latest runs if it is at most an hour late, and the others are skipped.
 */
export async function claimDueDrills(handle: DbHandle, nowMs = Date.now(), limit = RUNS_PER_PASS): Promise<ClaimOutcome> {
  const at = new Date(nowMs).toISOString();
  const due = await dueDrills(handle.db, at, limit);
  const outcome: ClaimOutcome = { claimed: [], skipped: [], more: due.length === limit };
  for (const drill of due) {
    const dueAt = drill.next_run_at!;
    let occurrence = dueAt;
    let next: string | null = null;
    try {
      const rule = parseSchedule(drill.schedule ?? '', drill.created_at);
      occurrence = latestOccurrence(rule, Date.parse(dueAt) - 1, nowMs)?.toISOString() ?? dueAt;
      next = occurrenceAfter(rule, Math.max(nowMs, Date.parse(occurrence)))?.toISOString() ?? null;
    } catch {
      // A schedule that no longer evaluates (none is accepted that way) stops: the occurrence due still runs.
      next = null;
    }
    const late = nowMs - Date.parse(occurrence) > CATCH_UP_MS;
    const run = await handle.unitOfWork(async (tx) => {
      if (!(await moveNextRun(tx, drill.id, dueAt, next))) return null;
      if (late || (await hasRunFor(tx, drill.id, occurrence))) return undefined;
      const row = newRun(drill, occurrence, at);
      await insertRun(tx, row);
      return row;
    });
    if (run) outcome.claimed.push(run);
    else if (run === undefined && late) outcome.skipped.push({ drillId: drill.id, scheduledFor: occurrence });
  }
  return outcome;
}

/** The declared event of an exercise: its first event. */
async function declaredEvent(db: DbHandle['db'], orgId: string, emergencyId: string): Promise<MeasuredEvent | null> {
  const [event] = await emergencyEvents(db, orgId, emergencyId, { at: 1 }, 1, ['id', 'stream_offset', 'created_at']);
  return event ? { id: event.id, stream_offset: Number(event.stream_offset), created_at: event.created_at } : null;
}

/**
 * Declares a claimed run's exercise emergency and marks the run `running`. Idempotent: after a crash between the claim and
 * the declare, or when two workers start the same run, the externalId finds the emergency declared first.
 */
export async function startRun(ctx: AppContext, run: DrillRunTable): Promise<void> {
  const drill = await drillById(ctx.db.db, run.drill_id);
  if (!drill) return;
  let emergencyId: string;
  try {
    const emergency = await declareEmergency(
      ctx,
      drillCaller,
      run.org_id,
      {
        externalId: `drill:${run.id}`,
        source: 'drill',
        ...(drill.category_id !== null ? { categoryId: drill.category_id } : {}),
        ...(drill.description !== null ? { description: drill.description } : {}),
        exercise: true,
        metadata: { drillId: drill.id, runId: run.id, scheduledFor: run.scheduled_for },
      },
      {},
      { ackDeadlineSeconds: Number(drill.ack_deadline_seconds), declaredBy: drillActor(drill) },
    );
    emergencyId = emergency.emergencyId;
  } catch (err) {
    if (!(err instanceof AppError && err.code === 'external_id_conflict')) throw err;
    emergencyId = String(err.extra.emergencyId);
  }
  const event = await declaredEvent(ctx.db.db, run.org_id, emergencyId);
  if (!event) throw new Error(`the exercise ${emergencyId} of drill run ${run.id} has no declared event`);
  await markRunning(ctx.db.db, run.id, {
    emergency_id: emergencyId,
    event_id: event.id,
    started_at: event.created_at,
    resolve_at: new Date(Date.parse(event.created_at) + resolveAfterOf(drill) * 1000).toISOString(),
  });
}

/** Runs claimed and not declared yet: those whose claimer died in between (or is declaring right now). */
export async function startStranded(ctx: AppContext, limit = RUNS_PER_PASS): Promise<DrillRunTable[]> {
  const runs = await startingRuns(ctx.db.db, limit);
  for (const run of runs) await startRun(ctx, run);
  return runs;
}

/** The report of a run as it stands (running) or as stored (completed). */
export async function reportOf(db: DbHandle['db'], run: DrillRunTable, nowMs = Date.now()): Promise<DrillRunRecord> {
  if (run.status === 'completed' && run.report !== null) return JSON.parse(run.report) as DrillRunRecord;
  const head = {
    runId: run.id,
    drillId: run.drill_id,
    emergencyId: run.emergency_id,
    scheduledFor: run.scheduled_for,
    startedAt: run.started_at,
    completedAt: run.completed_at,
    status: run.status as DrillRunRecord['status'],
  };
  const event = run.emergency_id !== null ? await declaredEvent(db, run.org_id, run.emergency_id) : null;
  if (!event) {
    const none = { targeted: 0, acknowledged: 0, silentDevicesTotal: 0, silentDevices: [] };
    return { ...head, ...none, ackMs: { p50: null, p95: null, max: null }, webhooks: { delivered: 0, failed: 0, pending: 0 }, passed: false };
  }
  return { ...head, ...(await measureRun(db, run, event, nowMs)) };
}

/**
 * Completes one run: in one unit of work, moves it to `completed` (compare-and-set: only one worker gets past it), resolves
 * its exercise (unless someone did) and appends drill.completed with the report to the exercise's timeline, after the resolve.
 */
export async function completeRun(handle: DbHandle, run: DrillRunTable, nowMs = Date.now(), sandbox = false): Promise<DrillRunRecord | null> {
  const at = new Date(nowMs).toISOString();
  const drill = await drillById(handle.db, run.drill_id);
  if (!drill || run.emergency_id === null) return null;
  const emergencyId = run.emergency_id;
  return handle.unitOfWork(async (tx) => {
    const measured = await reportOf(tx.db, { ...run, status: 'running' }, nowMs);
    const report: DrillRunRecord = { ...measured, status: 'completed', completedAt: at };
    if (!(await markCompleted(tx, run.id, at, JSON.stringify(report)))) return null;
    const resolved = await resolveInUnit(
      tx,
      drillCaller,
      run.org_id,
      emergencyId,
      {
        resolutionNote: `Drill "${drill.name}" completed: ${report.acknowledged} of ${report.targeted} base stations acknowledged.`,
        resolvedByActor: drillActor(drill),
      },
      sandbox,
    );
    const sequence = resolved.sequence + 1;
    appendEvent(tx, {
      eventId: newId(),
      orgId: run.org_id,
      emergencyId,
      eventType: DRILL_COMPLETED,
      sequence,
      data: { ...report, exercise: true },
      createdAt: at,
      sandbox,
    });
    // The record is the resolved one: only the timeline grew.
    tx.emergencies.update(run.org_id, emergencyId, {
      status: 'resolved',
      category_id: resolved.emergency.category.id,
      sequence,
      updated_at: at,
      record: resolved.recordJson,
    });
    return report;
  });
}

/** Completes the runs whose resolve is due; `more` when the pass was full. */
export async function completeDueRuns(
  handle: DbHandle,
  nowMs = Date.now(),
  limit = RUNS_PER_PASS,
  /** A sandbox instance marks the events it appends. */
  sandbox = false,
): Promise<{ completed: DrillRunRecord[]; more: boolean }> {
  const due = await runsToComplete(handle.db, new Date(nowMs).toISOString(), limit);
  const completed: DrillRunRecord[] = [];
  for (const run of due) {
    const report = await completeRun(handle, run, nowMs, sandbox);
    if (report) completed.push(report);
  }
  return { completed, more: due.length === limit };
}
