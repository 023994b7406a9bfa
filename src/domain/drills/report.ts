import type { Kysely } from 'kysely';
import type { Database, DrillRunTable } from '../../db/types.js';
import { SILENT_DEVICES_LISTED } from '../deadlines/schema.js';
import { firstAckTimes } from '../devices/repo.js';
import { isOnline } from '../devices/service.js';
import { acknowledgedDeviceIds, censusCounts, silentDevicesOf, type TargetingEvent } from '../devices/targeting.js';
import { deliveryStatusCounts } from '../webhooks/queue.js';
import type { DrillRunRecord } from './schema.js';

/** The declared event of a run's exercise: what its report measures. */
export type MeasuredEvent = TargetingEvent & { id: string };

/** Nearest-rank percentile of ascending values: the smallest value with at least `q` of them at or below it. */
export function nearestRank(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
}

/**
 * The figures of a run, by the rules the receipts and the acknowledgement deadlines apply: who the alert targeted and who
 * acknowledged it (censusCounts), when each acknowledging station first did (firstAckTimes), who stayed silent
 * (silentDevicesOf) and what became of its webhook deliveries.
 */
export async function measureRun(
  db: Kysely<Database>,
  run: Pick<DrillRunTable, 'org_id'>,
  event: MeasuredEvent,
  nowMs = Date.now(),
): Promise<Pick<DrillRunRecord, 'targeted' | 'acknowledged' | 'ackMs' | 'silentDevices' | 'silentDevicesTotal' | 'webhooks' | 'passed'>> {
  const orgId = run.org_id;
  const { targeted, acknowledged } = await censusCounts(db, orgId, event);
  const acked = await acknowledgedDeviceIds(db, orgId, event);
  const offset = Number(event.stream_offset);
  const times = await firstAckTimes(
    db,
    orgId,
    acked.map((deviceId) => ({ eventId: event.id, deviceId, offset })),
  );
  const start = Date.parse(event.created_at);
  const ackMs = [...times.values()]
    .filter((t): t is string => t !== null)
    .map((t) => Math.max(0, Math.round(Date.parse(t) - start)))
    .sort((a, b) => a - b);
  const silent = await silentDevicesOf(db, orgId, event, SILENT_DEVICES_LISTED);
  const webhooks = { delivered: 0, failed: 0, pending: 0 };
  for (const row of await deliveryStatusCounts(db, orgId, [event.id])) {
    const n = Number(row.n);
    if (row.status === 'delivered') webhooks.delivered += n;
    else if (row.status === 'failed') webhooks.failed += n;
    else webhooks.pending += n;
  }
  return {
    targeted,
    acknowledged,
    ackMs: { p50: nearestRank(ackMs, 0.5), p95: nearestRank(ackMs, 0.95), max: ackMs.at(-1) ?? null },
    silentDevices: silent.map((d) => ({ deviceId: d.id, name: d.name, online: isOnline(d, nowMs), lastSeenAt: d.last_seen_at })),
    silentDevicesTotal: targeted - acknowledged,
    webhooks,
    passed: acknowledged === targeted,
  };
}
