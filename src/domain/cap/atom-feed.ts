import { create } from 'xmlbuilder2';
import type { EmergencyRecord } from '../emergencies/schema.js';
import { appendAlert, literal, type OutgoingAlert, XML_OPTIONS } from './write-alert.js';

export const ATOM_NAMESPACE = 'http://www.w3.org/2005/Atom';

/**
 * Where the feed and each emergency's CAP document are served (URL references, resolved against the feed's URL): the alert of
 * an emergency is at `<emergencies>/<emergencyId>/cap`. Plain text, so the feed can be built on a worker thread.
 */
export interface CapLinks {
  feed: string;
  emergencies: string;
}

export interface FeedEntry {
  emergency: EmergencyRecord;
  alert: OutgoingAlert;
  /** When the alert was sent (ISO-8601): the entry's `updated`. */
  updated: string;
}

/**
 * An organization's CAP alerts as an Atom 1.0 feed (RFC 4287), the form CAP aggregators poll: one entry per emergency, its id
 * the emergency's, `updated` when its latest alert was sent, a link to the alert's own document, and the alert itself as the
 * entry's XML content.
 */
export function atomFeed(org: { id: string; name: string }, entries: FeedEntry[], links: CapLinks, now: string): string {
  const doc = create(XML_OPTIONS);
  const feed = doc.ele(ATOM_NAMESPACE, 'feed');
  feed.ele('id').txt(`urn:uuid:${org.id}`);
  feed.ele('title').txt(literal(`${org.name}: emergencies (CAP 1.2)`));
  const latest = entries.map((e) => e.updated).sort();
  feed.ele('updated').txt(latest.at(-1) ?? now);
  feed.ele('author').ele('name').txt(literal(org.name));
  feed.ele('link', { rel: 'self', type: 'application/atom+xml', href: literal(links.feed) });
  feed.ele('generator').txt('emergency-api');
  for (const { emergency, alert, updated } of entries) {
    const entry = feed.ele('entry');
    entry.ele('id').txt(`urn:uuid:${emergency.emergencyId}`);
    // An exercise is named so in every reader's list, before anything else.
    entry.ele('title').txt(literal(emergency.exercise === true ? `EXERCISE: ${alert.info.headline}` : alert.info.headline));
    entry.ele('updated').txt(updated);
    entry.ele('published').txt(emergency.createdAt);
    entry.ele('link', { rel: 'alternate', type: 'application/cap+xml', href: literal(`${links.emergencies}/${emergency.emergencyId}/cap`) });
    entry.ele('category', { term: alert.info.category, label: literal(emergency.category.name) });
    if (emergency.description !== null) entry.ele('summary').txt(literal(emergency.description));
    appendAlert(entry.ele('content', { type: 'application/cap+xml' }), alert);
  }
  return doc.end({ prettyPrint: true });
}
