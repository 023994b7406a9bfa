import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { XmlDocument } from 'libxml2-wasm';

/** The schema the service ships (a verbatim copy of the OASIS one), and the CAP 1.2 specification's examples (Appendix A). */
export const CAP_XSD = resolve(import.meta.dirname, '../../src/domain/cap/CAP-v1.2.xsd');
export const CAP_NS = 'urn:oasis:names:tc:emergency:cap:1.2';
export const ATOM_NS = 'http://www.w3.org/2005/Atom';

export const example = (name: 'a1-homeland-security-advisory' | 'a2-severe-thunderstorm-warning' | 'a3-earthquake-update' | 'a4-amber-alert-multilingual') =>
  readFileSync(join(import.meta.dirname, 'fixtures', `${name}.xml`), 'utf8');

/** Debian's xmllint (libxml2-utils), independent of the service's own validator, judges a document against the schema. */
export function assertValidCap(xml: string, what: string): void {
  const run = spawnSync('xmllint', ['--noout', '--nonet', '--schema', CAP_XSD, '-'], { input: xml, encoding: 'utf8' });
  assert.ok(!run.error, `xmllint must be installed (apt-get install libxml2-utils): ${run.error?.message}`);
  assert.equal(run.status, 0, `${what} is not valid CAP 1.2:\n${run.stderr}\n${xml}`);
}

export interface CapView {
  identifier: string;
  sender: string;
  sent: string;
  status: string;
  msgType: string;
  scope: string;
  references: string | null;
  note: string | null;
  category: string;
  event: string;
  responseType: string | null;
  urgency: string;
  severity: string;
  certainty: string;
  senderName: string;
  description: string | null;
  areaDesc: string | null;
  circle: string | null;
}

const NS = { cap: CAP_NS, atom: ATOM_NS };

/** The fields of a CAP alert document (or of the alert inside an element such as an Atom entry's content). */
export function capView(xml: string): CapView {
  const doc = XmlDocument.fromString(xml);
  try {
    const root = doc.root.name === 'alert' ? doc.root : doc.root.get('.//cap:alert', NS)!;
    const text = (path: string) => root.get(path, NS)?.content ?? null;
    return {
      identifier: text('cap:identifier')!,
      sender: text('cap:sender')!,
      sent: text('cap:sent')!,
      status: text('cap:status')!,
      msgType: text('cap:msgType')!,
      scope: text('cap:scope')!,
      references: text('cap:references'),
      note: text('cap:note'),
      category: text('cap:info/cap:category')!,
      event: text('cap:info/cap:event')!,
      responseType: text('cap:info/cap:responseType'),
      urgency: text('cap:info/cap:urgency')!,
      severity: text('cap:info/cap:severity')!,
      certainty: text('cap:info/cap:certainty')!,
      senderName: text('cap:info/cap:senderName')!,
      description: text('cap:info/cap:description'),
      areaDesc: text('cap:info/cap:area/cap:areaDesc'),
      circle: text('cap:info/cap:area/cap:circle'),
    };
  } finally {
    doc.dispose();
  }
}

export interface AtomEntry {
  id: string;
  updated: string;
  capLink: string;
  /** The CAP alert of the entry's content, as a document of its own. */
  alertXml: string;
}

/** An Atom 1.0 feed read with libxml2: its root must be `feed` in the Atom namespace. */
export function atomView(xml: string): { id: string; updated: string; entries: AtomEntry[] } {
  const doc = XmlDocument.fromString(xml);
  try {
    assert.equal(doc.root.name, 'feed');
    assert.equal(doc.root.namespaceUri, ATOM_NS);
    const entries = doc.root.find('atom:entry', NS).map((entry) => {
      const content = entry.get('atom:content', NS)!;
      assert.equal(content.get('@type')?.content, 'application/cap+xml');
      const alert = content.get('cap:alert', NS)!;
      return {
        id: entry.get('atom:id', NS)!.content,
        updated: entry.get('atom:updated', NS)!.content,
        capLink: entry.get("atom:link[@rel='alternate'][@type='application/cap+xml']/@href", NS)!.content,
        alertXml: `<?xml version="1.0" encoding="UTF-8"?>\n${alert.toString()}`,
      };
    });
    return { id: doc.root.get('atom:id', NS)!.content, updated: doc.root.get('atom:updated', NS)!.content, entries };
  } finally {
    doc.dispose();
  }
}

/** POSTs a CAP alert as the service expects it. */
export async function postCap(base: string, key: string, orgId: string, xml: string | Uint8Array, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/orgs/${orgId}/cap`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/cap+xml', ...headers },
    body: typeof xml === 'string' ? xml : new Blob([new Uint8Array(xml)]),
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body, headers: res.headers };
}

/** A GET answering XML: its status, content type and text. */
export async function getXml(url: string, key: string) {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}
