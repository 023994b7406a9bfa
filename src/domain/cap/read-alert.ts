import type { XmlElement, XmlNode } from 'libxml2-wasm';
import { fieldError, FieldValidationError } from '../../errors.js';
import { offloadTask } from '../../offload/pool.js';
import { CAP_NAMESPACE, capReader } from './cap-schema.js';
import { screenXml } from './xml-screen.js';

/** An earlier message an alert names in `references`. */
export interface CapReference {
  sender: string;
  identifier: string;
}

export interface IncomingArea {
  polygons: string[];
  circles: string[];
}

export interface IncomingInfo {
  categories: string[];
  event: string;
  senderName: string | null;
  headline: string | null;
  description: string | null;
  areas: IncomingArea[];
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
    infos: root.find('cap:info', NS).map(infoOf),
  };
}

function infoOf(info: XmlNode): IncomingInfo {
  return {
    categories: info.find('cap:category', NS).map((n) => n.content.trim()),
    event: textOf(info, 'event')!,
    senderName: textOf(info, 'senderName'),
    headline: textOf(info, 'headline'),
    description: textOf(info, 'description'),
    areas: info.find('cap:area', NS).map((area) => ({
      polygons: area.find('cap:polygon', NS).map((n) => n.content.trim()),
      circles: area.find('cap:circle', NS).map((n) => n.content.trim()),
    })),
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
