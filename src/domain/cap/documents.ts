import { withBuffers } from '../../offload/outcome.js';
import { offloadTask } from '../../offload/pool.js';
import type { EmergencyRecord } from '../emergencies/schema.js';
import { atomFeed, type CapLinks } from './atom-feed.js';
import { currentAlert } from './messages.js';
import type { CapTransition, EmergencyForCap } from './repo.js';
import { capDocument } from './write-alert.js';

/**
 * The CAP documents as the worker threads build them, from what the database holds: parsing the stored records and writing
 * the XML cost milliseconds per emergency, which the event loop must not spend.
 */

export interface AlertSource {
  row: EmergencyForCap;
  transitions: CapTransition[];
  orgName: string;
}

/** One emergency's latest state as a CAP alert document. */
export function alertDocument({ row, transitions, orgName }: AlertSource): string {
  return capDocument(currentAlert(JSON.parse(row.record) as EmergencyRecord, row, transitions, orgName));
}

export interface FeedSource {
  org: { id: string; name: string };
  rows: EmergencyForCap[];
  /** Each row's transitions, by emergency id. */
  transitions: Map<string, CapTransition[]>;
  links: CapLinks;
  /** ISO-8601: the feed's `updated` when it has no entry. */
  now: string;
}

/** The organization's Atom feed of the given emergencies, in their order, as UTF-8 (moved to the main thread, not copied). */
export function feedDocument(source: FeedSource): Uint8Array {
  const entries = source.rows.map((row) => {
    const emergency = JSON.parse(row.record) as EmergencyRecord;
    const alert = currentAlert(emergency, row, source.transitions.get(row.id) ?? [], source.org.name);
    return { emergency, alert, updated: new Date(alert.sent).toISOString() };
  });
  const bytes = Buffer.from(atomFeed(source.org, entries, source.links, source.now), 'utf8');
  return withBuffers(bytes, [bytes]);
}

export const alertDocumentTask = offloadTask(import.meta.url, alertDocument);
export const feedDocumentTask = offloadTask(import.meta.url, feedDocument);
