/**
 * The open emergencies (declared or categorized) of one organization, as the tab title, the board's count and
 * the organizations overview show them: read once from the list, then kept current by the live channel's
 * transitions (a resolution removes one, a declare or re-categorization sets it).
 */
import { allPages, pub, unwrap } from './api';
import { changedEmergency } from './deadlines';
import type { Emergency, EventEnvelope } from './types';

export interface OpenEmergencies {
  records: ReadonlyMap<string, Emergency>;
  /** Changed by a live event: a read that started earlier must not put back an older state. */
  touched: ReadonlySet<string>;
}

export const NO_OPEN: OpenEmergencies = { records: new Map(), touched: new Set() };

/** `open` with one live event applied; the same object when the event is not a transition. */
export function withOpenEvent(open: OpenEmergencies, event: EventEnvelope): OpenEmergencies {
  const record = changedEmergency(event);
  if (!record) return open;
  const records = new Map(open.records);
  if (record.status === 'resolved') records.delete(record.emergencyId);
  else records.set(record.emergencyId, record);
  return { records, touched: new Set(open.touched).add(record.emergencyId) };
}

/** `open` with the list's records added, except those a live event has changed since the read began. */
export function withLoadedOpen(open: OpenEmergencies, loaded: Emergency[]): OpenEmergencies {
  const records = new Map(open.records);
  for (const e of loaded) if (!open.touched.has(e.emergencyId) && e.status !== 'resolved') records.set(e.emergencyId, e);
  return { records, touched: open.touched };
}

/** The highest category severity among the open emergencies; null when none is open. */
export function highestSeverity(open: OpenEmergencies): number | null {
  let highest: number | null = null;
  for (const e of open.records.values()) if (highest === null || e.category.severity > highest) highest = e.category.severity;
  return highest;
}

/** Per status, at most this many are read: a count past it is a lower bound, and the load stays small. */
const MAX_PER_STATUS = 1000;

/** Every open emergency of the org: the declared ones, then the categorized ones (the list filters on one status). */
export async function loadOpenEmergencies(orgId: string, signal?: AbortSignal): Promise<Emergency[]> {
  const byStatus = (status: 'declared' | 'categorized') =>
    allPages<Emergency>(
      (cursor) => unwrap(pub().GET('/orgs/{org_id}/emergencies', { params: { path: { org_id: orgId }, query: { status, limit: 200, cursor } }, signal })),
      MAX_PER_STATUS,
    );
  const declared = await byStatus('declared');
  const categorized = await byStatus('categorized');
  return [...declared, ...categorized];
}
