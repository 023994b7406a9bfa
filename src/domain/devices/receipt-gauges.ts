import type { Kysely } from 'kysely';
import type { Database } from '../../db/types.js';
import { eventPositions, streamHeads } from '../../log/reads.js';

/**
 * The receipt gauges of /metrics, read from the database. Each reports a bounded number of labelled
 * series (the ones furthest behind) and summarises the rest, so a scrape's size and cost do not grow
 * with the number of tenants or open emergencies.
 */

export interface OrgAckLags {
  /** The orgs whose furthest-behind active device lags most, largest lag first. */
  top: { orgId: string; lag: number }[];
  /** The largest lag among the orgs left out; null when none was. */
  restLag: number | null;
}

export interface UnacknowledgedDevices {
  /** The open emergencies with the most active devices that have not acknowledged their latest event, most first. */
  top: { orgId: string; emergencyId: string; devices: number }[];
  /** Those devices summed over the open emergencies left out; null when none was. */
  restDevices: number | null;
}

/** Per org (at most `limit` of them), how many events its furthest-behind active device has not acknowledged. */
export async function deviceAckLags(db: Kysely<Database>, limit: number): Promise<OrgAckLags> {
  // One row beyond the limit: the largest lag of the orgs left out.
  const rows = await db
    .selectFrom('devices as d')
    .innerJoin(streamHeads(db).as('o'), 'o.org_id', 'd.org_id')
    .select(['d.org_id', (eb) => eb.fn.max(eb('o.head', '-', eb.ref('d.acked_offset'))).as('lag')])
    .where('d.status', '=', 'active')
    .groupBy('d.org_id')
    .orderBy('lag', 'desc')
    .orderBy('d.org_id')
    .limit(limit + 1)
    .execute();
  const lags = rows.map((r) => ({ orgId: r.org_id, lag: Math.max(0, Number(r.lag)) }));
  return { top: lags.slice(0, limit), restLag: lags.length > limit ? lags[limit]!.lag : null };
}

/** Per unresolved emergency (at most `limit`), the active devices that existed when its latest event was created and have not acknowledged it. */
export async function unacknowledgedDevices(db: Kysely<Database>, limit: number): Promise<UnacknowledgedDevices> {
  const pending = db
    .selectFrom('emergencies as em')
    .innerJoin(eventPositions(db).as('ev'), (join) => join.onRef('ev.emergency_id', '=', 'em.id').onRef('ev.sequence', '=', 'em.sequence'))
    .leftJoin('devices as d', (join) =>
      join
        .onRef('d.org_id', '=', 'em.org_id')
        .on('d.status', '=', 'active')
        .onRef('d.created_at', '<=', 'ev.created_at')
        .onRef('d.acked_offset', '<', 'ev.stream_offset'),
    )
    .where('em.status', '<>', 'resolved');
  const rows = await pending
    .select(['em.org_id', 'em.id', (eb) => eb.fn.count('d.id').as('devices')])
    .groupBy(['em.org_id', 'em.id'])
    .orderBy('devices', 'desc')
    .orderBy('em.id')
    .limit(limit + 1)
    .execute();
  const top = rows.slice(0, limit).map((r) => ({ orgId: r.org_id, emergencyId: r.id, devices: Number(r.devices) }));
  if (rows.length <= limit) return { top, restDevices: null };
  const total = await pending.select((eb) => eb.fn.count('d.id').as('devices')).executeTakeFirstOrThrow();
  return { top, restDevices: Number(total.devices) - top.reduce((sum, r) => sum + r.devices, 0) };
}
