import type { XmlElement } from 'libxml2-wasm';
import type { XMLBuilder } from 'xmlbuilder2/lib/interfaces.js';
import { CAP_NAMESPACE, capReader } from './cap-schema.js';
import { literal } from './xml-text.js';

/**
 * The faithful relay of an ingested CAP message (extensions §12): its elements as they were sent, with only `identifier`,
 * `sender` and `sent` re-issued and `references` naming the chain. Read and written on the worker threads.
 */

/** One CAP element of a kept document: its text when it has no child element, else its children. */
export interface CapElement {
  name: string;
  text: string | null;
  children: CapElement[];
}

/** The children of the kept document's `alert`, CAP elements only, in document order. */
export async function originalElementsOf(document: string): Promise<CapElement[]> {
  const reader = await capReader();
  // The document passed the schema when it was ingested; it is parsed again as it was then, and not validated twice.
  const doc = reader.parse(Buffer.from(document, 'utf8'));
  try {
    return childrenOf(doc.root);
  } finally {
    doc.dispose();
  }
}

/**
 * Elements of other namespaces are left out: the only one CAP allows is an XML signature of the whole alert, which no longer
 * holds once identifier, sender and sent are the relay's.
 */
function childrenOf(element: XmlElement): CapElement[] {
  const out: CapElement[] = [];
  for (let node = element.firstChild; node !== null; node = node.next) {
    if (!isElement(node) || node.namespaceUri !== CAP_NAMESPACE) continue;
    const children = childrenOf(node);
    out.push({ name: node.name, text: children.length === 0 ? node.content : null, children });
  }
  return out;
}

function isElement(node: unknown): node is XmlElement {
  return node !== null && typeof node === 'object' && 'firstChild' in node && 'namespaceUri' in node;
}

/** The relay as it is written: the original's elements, and what the service re-issues or states itself. */
export interface RelayedAlert {
  identifier: string;
  sender: string;
  /** CAP time. */
  sent: string;
  /** The service's own message type when it, not the ingested message, made the latest change; null keeps the original's. */
  msgType: string | null;
  /** The service's note (a resolution's) when it made the latest change; undefined keeps the original's. */
  note?: string | null;
  /** Test on a sandbox instance; undefined keeps the original's status. */
  status?: 'Test';
  /** `sender,identifier,sent` groups, space-separated; null when there are none. */
  references: string | null;
  elements: CapElement[];
}

/** The `alert` children in the schema's order; `info` blocks and repeated `code`s keep their own order. */
const ALERT_ORDER = [
  'identifier',
  'sender',
  'sent',
  'status',
  'msgType',
  'source',
  'scope',
  'restriction',
  'addresses',
  'code',
  'note',
  'references',
  'incidents',
  'info',
] as const;

/** Adds the relayed `alert` element (in the CAP namespace) under `parent`: the document itself, or an Atom entry's content. */
export function appendRelayedAlert(parent: XMLBuilder, relay: RelayedAlert): void {
  const root = parent.ele(CAP_NAMESPACE, 'alert');
  const ours: Partial<Record<(typeof ALERT_ORDER)[number], string | null>> = {
    identifier: relay.identifier,
    sender: relay.sender,
    sent: relay.sent,
    references: relay.references,
  };
  if (relay.msgType !== null) ours.msgType = relay.msgType;
  if (relay.note !== undefined) ours.note = relay.note;
  if (relay.status !== undefined) ours.status = relay.status;
  for (const name of ALERT_ORDER) {
    if (name in ours) {
      const value = ours[name];
      if (value !== null && value !== undefined) root.ele(name).txt(literal(value));
      continue;
    }
    for (const element of relay.elements) if (element.name === name) appendElement(root, element);
  }
}

function appendElement(parent: XMLBuilder, element: CapElement): void {
  const node = parent.ele(element.name);
  if (element.text !== null) {
    if (element.text !== '') node.txt(literal(element.text));
    return;
  }
  for (const child of element.children) appendElement(node, child);
}

/** The groups of the original's own `references`, as written. */
export function originalReferences(elements: CapElement[]): string[] {
  const text = elements.find((e) => e.name === 'references')?.text ?? '';
  return text.split(/\s+/).filter((g) => g !== '');
}
