import type { XmlElement, XmlNode } from 'libxml2-wasm';
import { fieldError, FieldValidationError } from '../../errors.js';
import { offloadTask } from '../../offload/pool.js';
import { CAP_NAMESPACE, capReader } from './cap-schema.js';
import { type IncomingArea, locationOfAreas, type Point } from './ingest-location.js';
import { capEventKey } from './schema.js';
import { screenXml } from './xml-screen.js';

/** An earlier message an alert names in `references`. */
export interface CapReference {
  sender: string;
  identifier: string;
}

export interface IncomingInfo {
  event: string;
  senderName: string | null;
  headline: string | null;
  description: string | null;
  /** Where its areas point (see locationOfAreas), worked out on the worker thread. */
  location: Point | null;
}

/** What the service reads of an ingested CAP 1.2 alert. */
export interface IncomingAlert {
  identifier: string;
  sender: string;
  /** As written (CAP time, with its offset). */
  sent: string;
  status: string;
  msgType: string;
  note: string | null;
  references: CapReference[];
  infos: IncomingInfo[];
}

const NS = { cap: CAP_NAMESPACE };

/** An alert names at most this many earlier messages that the service looks up. */
const MAX_REFERENCES = 100;

/**
 * The alert in a request body, refused (422, loc ["body"]) unless it is a CAP 1.2 alert by the official schema: a DTD or entity
 * declaration and too deep a nesting are refused before any parsing (`xml_doctype_forbidden`, `too_deep`), then a document that
 * is not well-formed (`xml_invalid`) or not valid (`cap_invalid`).
 */
export async function readCapAlert(text: string): Promise<IncomingAlert> {
  const issue = screenXml(text);
  if (issue) throw new FieldValidationError([issue]);
  const reader = await capReader();
  const doc = reader.parse(Buffer.from(text, 'utf8'));
  try {
    reader.validate(doc);
    return alertOf(doc.root);
  } finally {
    doc.dispose();
  }
}

/** readCapAlert on a worker thread (libxml2 and the schema loaded once per thread). */
export const readCapAlertTask = offloadTask(import.meta.url, readCapAlert);

function alertOf(root: XmlElement): IncomingAlert {
  const identifier = token(root, 'identifier');
  const sender = token(root, 'sender');
  return {
    identifier,
    sender,
    sent: textOf(root, 'sent')!,
    status: textOf(root, 'status')!,
    msgType: textOf(root, 'msgType')!,
    note: textOf(root, 'note'),
    references: referencesOf(textOf(root, 'references')),
    infos: firstInfoPerEvent(root.find('cap:info', NS).map(infoOf)),
  };
}

/**
 * The service reads one info of an alert: the first whose event the org maps, else the first. The first info of each event
 * is all that choice needs, so only those cross to the main thread: an alert of 1,800 infos of one event costs it one.
 */
function firstInfoPerEvent(infos: IncomingInfo[]): IncomingInfo[] {
  const seen = new Set<string>();
  return infos.filter((info) => {
    const key = capEventKey(info.event);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function infoOf(info: XmlNode): IncomingInfo {
  // The areas stay on this thread: the main thread gets the one point they give.
  const areas: IncomingArea[] = info.find('cap:area', NS).map((area) => ({
    polygons: area.find('cap:polygon', NS).map((n) => n.content.trim()),
    circles: area.find('cap:circle', NS).map((n) => n.content.trim()),
  }));
  return {
    event: textOf(info, 'event')!,
    senderName: textOf(info, 'senderName'),
    headline: textOf(info, 'headline'),
    description: textOf(info, 'description'),
    location: locationOfAreas(areas),
  };
}

/** The trimmed text of the child element `name`, or null when it is absent. */
function textOf(node: XmlNode, name: string): string | null {
  const child = node.get(`cap:${name}`, NS);
  return child ? child.content.trim() : null;
}

/** `identifier` and `sender` must not contain white space, commas or the restricted characters `<` and `&` (CAP 1.2 §3.2.1). */
function token(root: XmlNode, name: 'identifier' | 'sender'): string {
  const value = textOf(root, name)!;
  if (!/^[^\s,<&]+$/.test(value)) {
    throw fieldError(['body', name], `${name} must be non-empty, without white space, commas, < or & (CAP 1.2 section 3.2.1)`, 'cap_invalid');
  }
  return value;
}

/** `references`: space-separated `sender,identifier,sent` groups (a missing `sent` is tolerated). */
function referencesOf(text: string | null): CapReference[] {
  if (text === null || text === '') return [];
  const groups = text.split(/\s+/).filter((g) => g !== '');
  const out: CapReference[] = [];
  for (const group of groups.slice(0, MAX_REFERENCES)) {
    const parts = group.split(',');
    if (parts.length < 2 || parts.length > 3 || !parts[0] || !parts[1]) {
      throw fieldError(['body', 'references'], `"${group.slice(0, 100)}" is not a sender,identifier,sent group`, 'cap_invalid');
    }
    out.push({ sender: parts[0], identifier: parts[1] });
  }
  return out;
}
