import type { Kysely } from 'kysely';
import type { DbHandle, Tx } from '../../db/connect.js';
import type { AckDeadlineTable, Database } from '../../db/types.js';
import { appendEvent } from '../../log/append.js';
import { lastFirstAckOfTargeted } from '../devices/repo.js';
import { isOnline } from '../devices/service.js';
import { activeDevicesOf, anySilent, censusCounts, censusOf, silentDevicesOf, type TargetingEvent } from '../devices/targeting.js';
import { newId } from '../shared/ids.js';
import { anyOverdueToSettle, claimDueDeadlines, claimEndedWatches, claimMarkedOverdue, settleDeadline, watchedEvents } from './repo.js';
import {
  DELIVERY_COMPLETED,
  DELIVERY_OVERDUE,
  type DeliveryCompletedData,
  type DeliveryOverdueData,
  SILENT_DEVICES_LISTED,
  type WATCHED_EVENT_TYPES,
} from './schema.js';

/**
 * Acknowledgement deadlines coming due. Each pending deadline is claimed by one worker (its row locked,
 * others skip it), and settled in the transaction that appends what it caused, so across instances and
 * restarts each watched event gets at most one emergency.delivery_overdue and one
 * emergency.delivery_completed. The events take the emergency's next sequence numbers, so an emergency's
 * timeline stays gap-free.
 */

/** What became of a deadline, for the worker's metrics and logs. */
export interface SettledDeadline {
  /** The watched event's type. */
  eventType: string;
  outcome: 'met' | 'overdue' | 'completed' | 'expired';
  /** From the watched event to the acknowledgement that completed it, once every targeted device has (met, completed). */
  fullAckSeconds: number | null;
}

/**
 * Deadlines claimed per transaction. Small, because each costs a few statements and, on SQLite, the transaction
 * holds the one connection that every other tenant's commit waits for.
 */
export const DEADLINES_PER_CLAIM = 25;
/** Ended watches closed per transaction: one statement each, nothing read. */
const ENDED_PER_CLAIM = 200;
/** Device ids per read of a re-send's targets. */
const IDS_PER_READ = 500;

type WatchedEvent = TargetingEvent & { id: string };

/** A follow-up event to append: an overdue or completed event of the watched event's emergency. */
interface FollowUp {
  row: AckDeadlineTable;
  eventType: typeof DELIVERY_OVERDUE | typeof DELIVERY_COMPLETED;
  data: DeliveryOverdueData | DeliveryCompletedData;
}

const watched = (row: AckDeadlineTable, event: WatchedEvent) => ({
  emergencyId: row.emergency_id,
  eventOffset: Number(event.stream_offset),
  eventType: row.event_type as (typeof WATCHED_EVENT_TYPES)[number],
});

/** Seconds from the event to the last first acknowledgement of its targeted devices; null when none has. */
async function fullAckSeconds(db: Kysely<Database>, orgId: string, event: WatchedEvent): Promise<number | null> {
  const last = await lastFirstAckOfTargeted(db, orgId, event);
  return last === null ? null : Math.max(0, (Date.parse(last) - Date.parse(event.created_at)) / 1000);
}

/**
 * Appends the follow-up events, each with its emergency's next sequence. Emergencies are locked in
 * (org, emergency) order and the events written org by org in that order, so two workers, or a worker
 * and a transition, never wait on each other in a cycle.
 */
async function appendFollowUps(tx: Tx, followUps: FollowUp[], at: string, sandbox: boolean): Promise<void> {
  const compare = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  const sorted = [...followUps].sort(
    (a, b) => compare(a.row.org_id, b.row.org_id) || compare(a.row.emergency_id, b.row.emergency_id) || a.data.eventOffset - b.data.eventOffset,
  );
  for (let i = 0; i < sorted.length; ) {
    const { org_id: orgId, emergency_id: emergencyId } = sorted[i]!.row;
    let j = i;
    while (j < sorted.length && sorted[j]!.row.org_id === orgId && sorted[j]!.row.emergency_id === emergencyId) j++;
    const locked = await tx.emergencies.lockForChange(orgId, emergencyId);
    if (locked) {
      let sequence = Number(locked.sequence);
      // Like every event of an emergency, the follow-ups say whether it is an exercise.
      const exercise = (JSON.parse(locked.record) as { exercise?: boolean }).exercise === true;
      for (const followUp of sorted.slice(i, j)) {
        sequence++;
        appendEvent(tx, {
          eventId: newId(),
          orgId,
          emergencyId,
          eventType: followUp.eventType,
          sequence,
          data: { ...followUp.data, exercise },
          createdAt: at,
          sandbox,
        });
      }
      // The record is unchanged: only the timeline grew.
      tx.emergencies.update(orgId, emergencyId, { status: locked.status, category_id: locked.category_id, sequence, updated_at: at, record: locked.record });
    }
    i = j;
  }
}

/** The overdue event's data: counts over every targeted device, names of at most SILENT_DEVICES_LISTED, each a bounded read. */
async function overdueData(db: Kysely<Database>, row: AckDeadlineTable, event: WatchedEvent, nowMs: number): Promise<DeliveryOverdueData | null> {
  const counts = await censusCounts(db, row.org_id, event);
  if (counts.acknowledged >= counts.targeted) return null;
  const silent = await silentDevicesOf(db, row.org_id, event, SILENT_DEVICES_LISTED);
  return {
    ...watched(row, event),
    deadlineSeconds: Number(row.deadline_seconds),
    targeted: counts.targeted,
    acknowledged: counts.acknowledged,
    silentDevices: silent.map((d) => ({
      deviceId: d.id,
      name: d.name,
      online: isOnline(d, nowMs),
      lastSeenAt: d.last_seen_at,
    })),
    silentDevicesTotal: counts.targeted - counts.acknowledged,
  };
}

/**
 * Settles up to `limit` deadlines due at `nowMs`: a deadline whose targeted devices have all
 * acknowledged is `met`; otherwise one emergency.delivery_overdue is appended and it is `overdue`.
 * `more` is true when the claim was full (more may be due).
 */
export async function fireDueDeadlines(
  handle: DbHandle,
  nowMs = Date.now(),
  limit = DEADLINES_PER_CLAIM,
  /** A sandbox instance marks the events it appends. */
  sandbox = false,
): Promise<{ settled: SettledDeadline[]; more: boolean }> {
  const at = new Date(nowMs).toISOString();
  const met: { row: AckDeadlineTable; event: WatchedEvent }[] = [];
  const settled: SettledDeadline[] = [];
  const claimed = await handle.unitOfWork(async (tx) => {
    const rows = await claimDueDeadlines(tx, at, limit);
    if (rows.length === 0) return 0;
    const events = await watchedEvents(
      tx.db,
      rows.map((r) => r.event_id),
    );
    const followUps: FollowUp[] = [];
    for (const row of rows) {
      const stored = events.get(row.event_id);
      if (!stored) {
        // Removed by retention while no worker ran: nothing left to watch.
        await settleDeadline(tx, row.event_id, { state: 'expired', closed_at: at });
        settled.push({ eventType: row.event_type, outcome: 'expired', fullAckSeconds: null });
        continue;
      }
      const event = { id: row.event_id, ...stored };
      const data = await overdueData(tx.db, row, event, nowMs);
      if (data === null) {
        await settleDeadline(tx, row.event_id, { state: 'met', closed_at: at });
        met.push({ row, event });
        continue;
      }
      // Marked for one look: an acknowledgement committed while this claim ran may have found the row still pending.
      await settleDeadline(tx, row.event_id, { state: 'overdue', overdue_at: at, event_offset: Number(event.stream_offset), check_at: at });
      followUps.push({ row, eventType: DELIVERY_OVERDUE, data });
      settled.push({ eventType: row.event_type, outcome: 'overdue', fullAckSeconds: null });
    }
    await appendFollowUps(tx, followUps, at, sandbox);
    return rows.length;
  });
  // Measured once committed, outside the claim's transaction: only the metrics need it.
  for (const { row, event } of met) {
    settled.push({ eventType: row.event_type, outcome: 'met', fullAckSeconds: await fullAckSeconds(handle.db, row.org_id, event) });
  }
  return { settled, more: claimed === limit };
}

/**
 * Looks once at up to `limit` overdue deadlines that an acknowledgement or a revocation marked (see markOverdueForCheck):
 * one whose targeted devices have all acknowledged gets one emergency.delivery_completed and is `completed`; one whose watch
 * ended (its deadline is more than `watchMs` past) is `expired` instead, so that the overdue event stays the last word. The
 * others lose their mark until the next acknowledgement that concerns them. What this costs follows the acknowledgements
 * that arrive, never the number of overdue events or the time they have been waiting.
 */
export async function completeMarkedDeadlines(
  handle: DbHandle,
  watchMs: number,
  nowMs = Date.now(),
  limit = DEADLINES_PER_CLAIM,
  sandbox = false,
): Promise<{ settled: SettledDeadline[]; examined: number; more: boolean }> {
  const at = new Date(nowMs).toISOString();
  const watchedSince = new Date(nowMs - watchMs).toISOString();
  const settled: SettledDeadline[] = [];
  // Most ticks find nothing marked: they cost one indexed read, not a transaction.
  if (!(await anyOverdueToSettle(handle.db))) return { settled, examined: 0, more: false };
  const examined = await handle.unitOfWork(async (tx) => {
    const rows = await claimMarkedOverdue(tx, limit);
    if (rows.length === 0) return 0;
    const events = await watchedEvents(
      tx.db,
      rows.map((r) => r.event_id),
    );
    const followUps: FollowUp[] = [];
    for (const row of rows) {
      const stored = events.get(row.event_id);
      if (!stored || row.deadline_at < watchedSince) {
        await settleDeadline(tx, row.event_id, { state: 'expired', closed_at: at, check_at: null });
        settled.push({ eventType: row.event_type, outcome: 'expired', fullAckSeconds: null });
        continue;
      }
      const event = { id: row.event_id, ...stored };
      // Acks only grow and revocations only shrink the targeted set: once complete, it stays complete.
      if (await anySilent(tx.db, row.org_id, event)) {
        await settleDeadline(tx, row.event_id, { check_at: null });
        continue;
      }
      const { targeted } = await censusCounts(tx.db, row.org_id, event);
      const lastAck = await lastFirstAckOfTargeted(tx.db, row.org_id, event);
      const overdueAt = row.overdue_at ?? at;
      // Completed by the last silent device's ack; when it was revoked instead, by the time that was noticed.
      const endMs = lastAck !== null && lastAck > overdueAt ? Date.parse(lastAck) : nowMs;
      const data: DeliveryCompletedData = {
        ...watched(row, event),
        targeted,
        completedAfterMs: Math.max(0, Math.round(endMs - Date.parse(overdueAt))),
      };
      await settleDeadline(tx, row.event_id, { state: 'completed', closed_at: at, check_at: null });
      followUps.push({ row, eventType: DELIVERY_COMPLETED, data });
      settled.push({
        eventType: row.event_type,
        outcome: 'completed',
        fullAckSeconds: lastAck === null ? null : Math.max(0, (Date.parse(lastAck) - Date.parse(event.created_at)) / 1000),
      });
    }
    await appendFollowUps(tx, followUps, at, sandbox);
    return rows.length;
  });
  return { settled, examined, more: examined === limit };
}

/**
 * Ends the watch of up to `limit` overdue deadlines whose deadline is more than `watchMs` past: they become `expired`
 * without a look, and no emergency.delivery_completed can follow their overdue event any more.
 */
export async function expireEndedWatches(
  handle: DbHandle,
  watchMs: number,
  nowMs = Date.now(),
  limit = ENDED_PER_CLAIM,
): Promise<{ settled: SettledDeadline[]; more: boolean }> {
  const at = new Date(nowMs).toISOString();
  const before = new Date(nowMs - watchMs).toISOString();
  if (!(await anyOverdueToSettle(handle.db, before))) return { settled: [], more: false };
  const rows = await handle.unitOfWork(async (tx) => {
    const ended = await claimEndedWatches(tx, before, limit);
    for (const row of ended) await settleDeadline(tx, row.event_id, { state: 'expired', closed_at: at, check_at: null });
    return ended;
  });
  return { settled: rows.map((r) => ({ eventType: r.event_type, outcome: 'expired' as const, fullAckSeconds: null })), more: rows.length === limit };
}

/**
 * Of these devices (connected to the caller's gateway), those the event targets that have not acknowledged it: the ones its
 * re-send is for.
 */
export async function silentAmong(db: Kysely<Database>, orgId: string, event: TargetingEvent, deviceIds: readonly string[]): Promise<Set<string>> {
  const silent = new Set<string>();
  for (let i = 0; i < deviceIds.length; i += IDS_PER_READ) {
    const devices = await activeDevicesOf(db, orgId, deviceIds.slice(i, i + IDS_PER_READ));
    for (const d of censusOf(event, devices).silent) silent.add(d.id);
  }
  return silent;
}
