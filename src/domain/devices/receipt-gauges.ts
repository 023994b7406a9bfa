import type { Kysely } from 'kysely';
import type { Database } from '../../db/types.js';

/** At most this many open emergencies are reported (each is one labelled series). */
const MAX_OPEN_EMERGENCIES = 1_000;

/** Per org, how many events its furthest-behind active device has not acknowledged. */
export async function deviceAckLags(db: Kysely<Database>): Promise<{ orgId: string; lag: number }[]> {
  const rows = await db
    .selectFrom('devices as d')
    .innerJoin('orgs as o', 'o.id', 'd.org_id')
    .select(['d.org_id', (eb) => eb.fn.max(eb('o.event_offset', '-', eb.ref('d.acked_offset'))).as('lag')])
    .where('d.status', '=', 'active')
    .groupBy('d.org_id')
    .execute();
  return rows.map((r) => ({ orgId: r.org_id, lag: Math.max(0, Number(r.lag)) }));
}

/**
 * Per emergency not yet resolved, the active devices that existed when its latest event was created
 * and have not acknowledged that event.
 */
export async function unacknowledgedDevices(db: Kysely<Database>): Promise<{ orgId: string; emergencyId: string; devices: number }[]> {
  const rows = await db
    .selectFrom('emergencies as em')
    .innerJoin('events as ev', (join) => join.onRef('ev.emergency_id', '=', 'em.id').onRef('ev.sequence', '=', 'em.sequence'))
    .leftJoin('devices as d', (join) =>
      join
        .onRef('d.org_id', '=', 'em.org_id')
        .on('d.status', '=', 'active')
        .onRef('d.created_at', '<=', 'ev.created_at')
        .onRef('d.acked_offset', '<', 'ev.stream_offset'),
    )
    .select(['em.org_id', 'em.id', (eb) => eb.fn.count('d.id').as('devices')])
    .where('em.status', '<>', 'resolved')
    .groupBy(['em.org_id', 'em.id'])
    .limit(MAX_OPEN_EMERGENCIES)
    .execute();
  return rows.map((r) => ({ orgId: r.org_id, emergencyId: r.id, devices: Number(r.devices) }));
}
