import type { Kysely } from 'kysely';
import type { Tx } from '../../db/connect.js';
import type { Database, DrillRunTable, DrillTable } from '../../db/types.js';

type Db = Kysely<Database>;

/** A drill of the org that is not deleted; undefined otherwise. */
export async function findDrill(db: Db, orgId: string, drillId: string): Promise<DrillTable | undefined> {
  return db.selectFrom('drills').selectAll().where('org_id', '=', orgId).where('id', '=', drillId).where('deleted_at', 'is', null).executeTakeFirst();
}

/** Any drill by id, deleted or not: a run under way completes after its drill was deleted. */
export async function drillById(db: Db, drillId: string): Promise<DrillTable | undefined> {
  return db.selectFrom('drills').selectAll().where('id', '=', drillId).executeTakeFirst();
}

export async function insertDrill(tx: Pick<Tx, 'db'>, row: DrillTable): Promise<void> {
  await tx.db.insertInto('drills').values(row).execute();
}

export async function updateDrill(tx: Pick<Tx, 'db'>, orgId: string, drillId: string, change: Partial<DrillTable>): Promise<void> {
  await tx.db.updateTable('drills').set(change).where('org_id', '=', orgId).where('id', '=', drillId).execute();
}

/** Scheduled drills whose next run is due at `now`, soonest first. */
export async function dueDrills(db: Db, now: string, limit: number): Promise<DrillTable[]> {
  return db
    .selectFrom('drills')
    .selectAll()
    .where('next_run_at', 'is not', null)
    .where('next_run_at', '<=', now)
    .where('deleted_at', 'is', null)
    .orderBy('next_run_at')
    .limit(limit)
    .execute();
}

/** The soonest scheduled run of any drill, or null. */
export async function soonestDrillRun(db: Db): Promise<string | null> {
  const row = await db
    .selectFrom('drills')
    .select('next_run_at')
    .where('next_run_at', 'is not', null)
    .where('deleted_at', 'is', null)
    .orderBy('next_run_at')
    .limit(1)
    .executeTakeFirst();
  return row?.next_run_at ?? null;
}

/**
 * Moves the drill's next run from `from` to `to` only if no one moved it first: the compare-and-set that gives each
 * scheduled time to one claimer. True when this call moved it.
 */
export async function moveNextRun(tx: Pick<Tx, 'db'>, drillId: string, from: string, to: string | null): Promise<boolean> {
  const result = await tx.db
    .updateTable('drills')
    .set({ next_run_at: to })
    .where('id', '=', drillId)
    .where('next_run_at', '=', from)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function insertRun(tx: Pick<Tx, 'db'>, row: DrillRunTable): Promise<void> {
  await tx.db.insertInto('drill_runs').values(row).execute();
}

export async function runById(db: Db, runId: string): Promise<DrillRunTable | undefined> {
  return db.selectFrom('drill_runs').selectAll().where('id', '=', runId).executeTakeFirst();
}

/** Runs claimed whose exercise was not declared yet (their claimer may have died): at most `limit`, oldest first. */
export async function startingRuns(db: Db, limit: number): Promise<DrillRunTable[]> {
  return db.selectFrom('drill_runs').selectAll().where('status', '=', 'starting').orderBy('created_at').limit(limit).execute();
}

/** Runs whose resolve is due at `now`, at most `limit`, earliest first. */
export async function runsToComplete(db: Db, now: string, limit: number): Promise<DrillRunTable[]> {
  return db.selectFrom('drill_runs').selectAll().where('status', '=', 'running').where('resolve_at', '<=', now).orderBy('resolve_at').limit(limit).execute();
}

/** The soonest resolve of a running run, or null. */
export async function soonestResolve(db: Db): Promise<string | null> {
  const row = await db.selectFrom('drill_runs').select('resolve_at').where('status', '=', 'running').orderBy('resolve_at').limit(1).executeTakeFirst();
  return row?.resolve_at ?? null;
}

/** Records the declared exercise of a starting run; a run already past `starting` is left as it is. */
export async function markRunning(
  db: Db,
  runId: string,
  change: Pick<DrillRunTable, 'emergency_id' | 'event_id' | 'started_at' | 'resolve_at'>,
): Promise<void> {
  await db
    .updateTable('drill_runs')
    .set({ ...change, status: 'running' })
    .where('id', '=', runId)
    .where('status', '=', 'starting')
    .execute();
}

/** Compare-and-set from `running` to `completed`: true for the one unit of work that completes the run. */
export async function markCompleted(tx: Pick<Tx, 'db'>, runId: string, completedAt: string, report: string): Promise<boolean> {
  const result = await tx.db
    .updateTable('drill_runs')
    .set({ status: 'completed', completed_at: completedAt, report })
    .where('id', '=', runId)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** The drill's runs, newest first, after the cursor's (created_at, id), at most `limit + 1`. */
export async function runsOfDrill(db: Db, orgId: string, drillId: string, before: [string, string] | null, limit: number): Promise<DrillRunTable[]> {
  let query = db.selectFrom('drill_runs').selectAll().where('org_id', '=', orgId).where('drill_id', '=', drillId);
  if (before) {
    const [createdAt, id] = before;
    query = query.where((eb) => eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', id)])]));
  }
  return query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}
