import { inSharedMemory } from '../../offload/outcome.js';
import { offloadTask } from '../../offload/pool.js';
import type { EmergencyRecord } from '../emergencies/schema.js';
import { atomFeed, type CapLinks } from './atom-feed.js';
import { currentAlert } from './messages.js';
import { originalElementsOf } from './relay-alert.js';
import { sandboxAlert } from './sandbox.js';
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
  /** The kept document of the emergency's latest ingested message, which the alert relays; null when there is none. */
  original: string | null;
  /** From a sandbox instance: the alert is a Test. */
  sandbox: boolean;
}

/** One emergency's latest state as a CAP alert document. */
export async function alertDocument({ row, transitions, orgName, original, sandbox }: AlertSource): Promise<string> {
  const elements = original === null ? null : await originalElementsOf(original);
  const alert = currentAlert(JSON.parse(row.record) as EmergencyRecord, row, transitions, orgName, elements);
  return capDocument(sandbox ? sandboxAlert(alert) : alert);
}

export interface FeedSource {
  org: { id: string; name: string };
  rows: EmergencyForCap[];
  /** Each row's transitions, by emergency id. */
  transitions: Map<string, CapTransition[]>;
  links: CapLinks;
  /** The kept documents the entries relay, by emergency id (see AlertSource). */
  originals: Map<string, string>;
  /** ISO-8601: the feed's `updated` when it has no entry. */
  now: string;
  /** From a sandbox instance: every alert is a Test. */
  sandbox: boolean;
}

/** The organization's Atom feed of the given emergencies, in their order, as UTF-8 in shared memory (see inSharedMemory). */
export async function feedDocument(source: FeedSource): Promise<Uint8Array> {
  const entries = [];
  for (const row of source.rows) {
    const emergency = JSON.parse(row.record) as EmergencyRecord;
    const original = source.originals.get(row.id);
    const elements = original === undefined ? null : await originalElementsOf(original);
    const current = currentAlert(emergency, row, source.transitions.get(row.id) ?? [], source.org.name, elements);
    const alert = source.sandbox ? sandboxAlert(current) : current;
    entries.push({ emergency, alert, updated: new Date(alert.sent).toISOString() });
  }
  return inSharedMemory(Buffer.from(atomFeed(source.org, entries, source.links, source.now), 'utf8'));
}

export const alertDocumentTask = offloadTask(import.meta.url, alertDocument);
export const feedDocumentTask = offloadTask(import.meta.url, feedDocument);
