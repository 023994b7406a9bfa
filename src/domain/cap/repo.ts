import type { Kysely } from 'kysely';
import type { CapEventMappingTable, Database } from '../../db/types.js';
import { EMERGENCY_CATEGORIZED, EMERGENCY_RESOLVED } from '../../log/event-types.js';
import { eventsOfEmergencies, streamHeads } from '../../log/reads.js';

/** An emergency as the CAP export reads it: its stored record and what dates its latest change. */
export interface EmergencyForCap {
  id: string;
  record: string;
  sequence: number;
  updated_at: string;
}

/** One transition after the declare (re-categorized or resolved): a CAP Update or Cancel. */
export interface CapTransition {
  emergency_id: string;
  event_type: string;
  sequence: number;
  created_at: string;
}

/** Of an emergency's transitions, the export names at most this many of the latest in `references`. */
export const MAX_TRANSITIONS = 100;

const TRANSITION_TYPES = [EMERGENCY_CATEGORIZED, EMERGENCY_RESOLVED];

export async function emergencyForCap(db: Kysely<Database>, orgId: string, emergencyId: string): Promise<EmergencyForCap | undefined> {
  const row = await db
    .selectFrom('emergencies')
    .select(['id', 'record', 'sequence', 'updated_at'])
    .where('org_id', '=', orgId)
    .where('id', '=', emergencyId)
    .executeTakeFirst();
  return row && row.record !== null ? { ...row, record: row.record, sequence: Number(row.sequence) } : undefined;
}

/** An emergency of the feed: a resolved one leaves it a day after `resolved_at`. */
export interface FeedRow extends EmergencyForCap {
  resolved_at: string | null;
}

/** The open emergencies and those resolved since `resolvedSince`, at most `limit` of each, newest occurredAt first. */
export async function emergenciesForFeed(db: Kysely<Database>, orgId: string, resolvedSince: string, limit: number): Promise<FeedRow[]> {
  const open = await db
    .selectFrom('emergencies')
    .select(['id', 'record', 'sequence', 'updated_at', 'occurred_at'])
    .where('org_id', '=', orgId)
    .where('status', '<>', 'resolved')
    .orderBy('occurred_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  const resolved = await db
    .selectFrom('emergency_resolutions as r')
    .innerJoin('emergencies as e', 'e.id', 'r.emergency_id')
    .select(['e.id', 'e.record', 'e.sequence', 'e.updated_at', 'e.occurred_at', 'r.created_at as resolved_at'])
    .where('r.org_id', '=', orgId)
    .where('e.org_id', '=', orgId)
    .where('r.created_at', '>=', resolvedSince)
    .orderBy('e.occurred_at', 'desc')
    .orderBy('e.id', 'desc')
    .limit(limit)
    .execute();
  return [...open.map((r) => ({ ...r, resolved_at: null })), ...resolved]
    .filter((r) => r.record !== null)
    .sort((a, b) => (a.occurred_at === b.occurred_at ? (a.id < b.id ? 1 : -1) : a.occurred_at < b.occurred_at ? 1 : -1))
    .slice(0, limit)
    .map((r) => ({ id: r.id, record: r.record!, sequence: Number(r.sequence), updated_at: r.updated_at, resolved_at: r.resolved_at }));
}

/**
 * The latest transitions of each emergency (MAX_TRANSITIONS at most), oldest first. Events past the retention are gone: the
 * export then names what is left.
 */
export async function transitionsOf(db: Kysely<Database>, orgId: string, emergencyIds: string[]): Promise<Map<string, CapTransition[]>> {
  const out = new Map<string, CapTransition[]>(emergencyIds.map((id) => [id, []]));
  for (const row of await eventsOfEmergencies(db, orgId, emergencyIds, TRANSITION_TYPES)) {
    out.get(row.emergency_id)?.push({ ...row, sequence: Number(row.sequence) });
  }
  for (const [id, list] of out) if (list.length > MAX_TRANSITIONS) out.set(id, list.slice(-MAX_TRANSITIONS));
  return out;
}

/** What a cached feed of the org depends on besides the clock: its name, and its stream's head (every change of an emergency is an event). */
export async function feedStamp(db: Kysely<Database>, orgId: string): Promise<{ name: string; offset: number }> {
  const row = await db
    .selectFrom('orgs as o')
    .innerJoin(streamHeads(db).as('h'), 'h.org_id', 'o.id')
    .select(['o.name', 'h.head'])
    .where('o.id', '=', orgId)
    .executeTakeFirstOrThrow();
  return { name: row.name, offset: Number(row.head) };
}

export async function orgName(db: Kysely<Database>, orgId: string): Promise<string> {
  const row = await db.selectFrom('orgs').select('name').where('id', '=', orgId).executeTakeFirstOrThrow();
  return row.name;
}

/** Emergencies of the org by the externalIds and ids an ingested alert's references name. */
export async function referencedEmergencies(
  db: Kysely<Database>,
  orgId: string,
  refs: { externalIds: string[]; ids: string[] },
): Promise<{ id: string; external_id: string | null }[]> {
  if (refs.externalIds.length === 0 && refs.ids.length === 0) return [];
  return db
    .selectFrom('emergencies')
    .select(['id', 'external_id'])
    .where('org_id', '=', orgId)
    .where((eb) =>
      eb.or([...(refs.externalIds.length > 0 ? [eb('external_id', 'in', refs.externalIds)] : []), ...(refs.ids.length > 0 ? [eb('id', 'in', refs.ids)] : [])]),
    )
    .execute();
}

/** The org's mappings of the given event keys. */
export function mappingsByKey(db: Kysely<Database>, orgId: string, eventKeys: string[]): Promise<Pick<CapEventMappingTable, 'event_key' | 'category_id'>[]> {
  if (eventKeys.length === 0) return Promise.resolve([]);
  return db.selectFrom('cap_event_mappings').select(['event_key', 'category_id']).where('org_id', '=', orgId).where('event_key', 'in', eventKeys).execute();
}

/** Every mapping of the org, with its category's name, by event key. */
export function mappingsOf(db: Kysely<Database>, orgId: string) {
  return db
    .selectFrom('cap_event_mappings as m')
    .innerJoin('categories as c', 'c.id', 'm.category_id')
    .select(['m.id', 'm.event', 'm.event_key', 'm.category_id', 'c.name as category_name', 'm.created_at', 'm.updated_at'])
    .where('m.org_id', '=', orgId)
    .orderBy('m.event_key')
    .execute();
}
