import type { Kysely } from 'kysely';
import type { DbHandle, Tx } from '../../db/connect.js';
import type { AckDeadlineTable, Database } from '../../db/types.js';
import { appendEvent } from '../../events/append.js';
import { lastFirstAckAt } from '../devices/repo.js';
import { isOnline } from '../devices/service.js';
import { activeDevicesOf, type Census, censusOf, type DeviceRow, type TargetingEvent } from '../devices/targeting.js';
import { newId } from '../shared/ids.js';
import { claimDueDeadlines, claimOverdue, overdueDeadlines, settleDeadline, watchedEvents } from './repo.js';
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

/** Deadlines claimed per transaction. */
export const DEADLINES_PER_CLAIM = 100;
/** Overdue deadlines read per page of a completion check. */
const OVERDUE_PAGE = 500;
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

async function devicesOfOrgs(db: Kysely<Database>, orgIds: Iterable<string>): Promise<Map<string, DeviceRow[]>> {
  const byOrg = new Map<string, DeviceRow[]>();
  for (const orgId of new Set(orgIds)) byOrg.set(orgId, await activeDevicesOf(db, orgId));
  return byOrg;
}

/** Seconds from the event to the last first acknowledgement of its targeted devices; null when it targets none. */
async function fullAckSeconds(db: Kysely<Database>, orgId: string, event: WatchedEvent, census: Census): Promise<number | null> {
  if (census.targeted === 0) return null;
  const last = await lastFirstAckAt(
    db,
    orgId,
    Number(event.stream_offset),
    census.acknowledgedBy.map((d) => d.id),
  );
  return last === null ? null : Math.max(0, (Date.parse(last) - Date.parse(event.created_at)) / 1000);
}

/**
 * Appends the follow-up events, each with its emergency's next sequence. Emergencies are locked in
 * (org, emergency) order and the events written org by org in that order, so two workers, or a worker
 * and a transition, never wait on each other in a cycle.
 */
async function appendFollowUps(tx: Tx, followUps: FollowUp[], at: string): Promise<void> {
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
      for (const followUp of sorted.slice(i, j)) {
        sequence++;
        appendEvent(tx, { eventId: newId(), orgId, emergencyId, eventType: followUp.eventType, sequence, data: { ...followUp.data }, createdAt: at });
      }
      // The record is unchanged: only the timeline grew.
      tx.emergencies.update(orgId, emergencyId, { status: locked.status, category_id: locked.category_id, sequence, updated_at: at, record: locked.record });
    }
    i = j;
  }
}

function overdueData(row: AckDeadlineTable, event: WatchedEvent, census: Census, nowMs: number): DeliveryOverdueData {
  return {
    ...watched(row, event),
    deadlineSeconds: Number(row.deadline_seconds),
    targeted: census.targeted,
    acknowledged: census.acknowledged,
    silentDevices: census.silent.slice(0, SILENT_DEVICES_LISTED).map((d) => ({
      deviceId: d.id,
      name: d.name,
      online: isOnline(d, nowMs),
      lastSeenAt: d.last_seen_at,
    })),
    silentDevicesTotal: census.silent.length,
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
): Promise<{ settled: SettledDeadline[]; more: boolean }> {
  const at = new Date(nowMs).toISOString();
  const met: { row: AckDeadlineTable; event: WatchedEvent; census: Census }[] = [];
  const settled: SettledDeadline[] = [];
  const claimed = await handle.unitOfWork(async (tx) => {
    const rows = await claimDueDeadlines(tx, at, limit);
    if (rows.length === 0) return 0;
    const events = await watchedEvents(
      tx.db,
      rows.map((r) => r.event_id),
    );
    const devices = await devicesOfOrgs(
      tx.db,
      rows.map((r) => r.org_id),
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
      const census = censusOf(event, devices.get(row.org_id)!);
      if (census.silent.length === 0) {
        await settleDeadline(tx, row.event_id, { state: 'met', closed_at: at });
        met.push({ row, event, census });
        continue;
      }
      await settleDeadline(tx, row.event_id, { state: 'overdue', overdue_at: at });
      followUps.push({ row, eventType: DELIVERY_OVERDUE, data: overdueData(row, event, census, nowMs) });
      settled.push({ eventType: row.event_type, outcome: 'overdue', fullAckSeconds: null });
    }
    await appendFollowUps(tx, followUps, at);
    return rows.length;
  });
  // Measured once committed, outside the claim's transaction: only the metrics need it.
  for (const { row, event, census } of met) {
    settled.push({ eventType: row.event_type, outcome: 'met', fullAckSeconds: await fullAckSeconds(handle.db, row.org_id, event, census) });
  }
  return { settled, more: claimed === limit };
}

/**
 * Looks at every overdue deadline: once each device its event targets has acknowledged it, one
 * emergency.delivery_completed is appended and the deadline is `completed`. A deadline is watched until
 * its overdue event is `retentionDays` old (as long as events are kept), then `expired`. Reads the
 * org's devices once per page of deadlines; writes only when something completed or expired.
 */
export async function completeOverdueDeadlines(handle: DbHandle, retentionDays: number, nowMs = Date.now()): Promise<SettledDeadline[]> {
  const settled: SettledDeadline[] = [];
  const cutoff = new Date(nowMs - retentionDays * 86_400_000).toISOString();
  let after = '';
  for (;;) {
    const rows = await overdueDeadlines(handle.db, after, OVERDUE_PAGE);
    if (rows.length === 0) break;
    after = rows.at(-1)!.event_id;
    const events = await watchedEvents(
      handle.db,
      rows.map((r) => r.event_id),
    );
    const devices = await devicesOfOrgs(
      handle.db,
      rows.map((r) => r.org_id),
    );
    const done = new Map<string, { outcome: 'completed' | 'expired'; followUp?: FollowUp; fullAckSeconds: number | null }>();
    for (const row of rows) {
      const stored = events.get(row.event_id);
      if (!stored || (row.overdue_at !== null && row.overdue_at < cutoff)) {
        done.set(row.event_id, { outcome: 'expired', fullAckSeconds: null });
        continue;
      }
      const event = { id: row.event_id, ...stored };
      const census = censusOf(event, devices.get(row.org_id)!);
      // Acks only grow and revocations only shrink the targeted set: once complete, it stays complete.
      if (census.silent.length > 0) continue;
      const lastAck = await lastFirstAckAt(
        handle.db,
        row.org_id,
        Number(event.stream_offset),
        census.acknowledgedBy.map((d) => d.id),
      );
      const overdueAt = row.overdue_at ?? new Date(nowMs).toISOString();
      // Completed by the last silent device's ack; when it was revoked instead, by the time that was noticed.
      const endMs = lastAck !== null && lastAck > overdueAt ? Date.parse(lastAck) : nowMs;
      const data: DeliveryCompletedData = {
        ...watched(row, event),
        targeted: census.targeted,
        completedAfterMs: Math.max(0, Math.round(endMs - Date.parse(overdueAt))),
      };
      done.set(row.event_id, {
        outcome: 'completed',
        followUp: { row, eventType: DELIVERY_COMPLETED, data },
        fullAckSeconds: lastAck === null ? null : Math.max(0, (Date.parse(lastAck) - Date.parse(event.created_at)) / 1000),
      });
    }
    if (done.size > 0) {
      const at = new Date(nowMs).toISOString();
      await handle.unitOfWork(async (tx) => {
        // Another worker may have settled some since they were read: only those still overdue are ours.
        const claimed = await claimOverdue(tx, [...done.keys()]);
        const followUps: FollowUp[] = [];
        for (const row of claimed) {
          const outcome = done.get(row.event_id)!;
          await settleDeadline(tx, row.event_id, { state: outcome.outcome, closed_at: at });
          if (outcome.followUp) followUps.push(outcome.followUp);
          settled.push({ eventType: row.event_type, outcome: outcome.outcome, fullAckSeconds: outcome.fullAckSeconds });
        }
        await appendFollowUps(tx, followUps, at);
      });
    }
    if (rows.length < OVERDUE_PAGE) break;
  }
  return settled;
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
