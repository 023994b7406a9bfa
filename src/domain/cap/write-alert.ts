import { create } from 'xmlbuilder2';
import type { XMLBuilder } from 'xmlbuilder2/lib/interfaces.js';
import { CAP_NAMESPACE } from './cap-schema.js';
import type { CapArea, CapCategory, CapSeverity } from './export-mapping.js';
import { appendRelayedAlert, type RelayedAlert } from './relay-alert.js';
import { literal, XML_OPTIONS } from './xml-text.js';

export type CapMsgType = 'Alert' | 'Update' | 'Cancel';

/**
 * A CAP 1.2 alert the service publishes: one `info`, in the elements' schema order, from the emergency; or, for an ingested
 * emergency whose message is kept, `relay`, which is what is written instead (the rest still titles the feed's entry).
 */
export interface OutgoingAlert {
  identifier: string;
  sender: string;
  /** CAP time (see capTime). */
  sent: string;
  /** Exercise for an exercise emergency, Test from a sandbox instance (extensions §11), Actual otherwise. */
  status: 'Actual' | 'Exercise' | 'Test';
  msgType: CapMsgType;
  note: string | null;
  /** `sender,identifier,sent` of earlier messages, space-separated; null when there are none. */
  references: string | null;
  incidents: string;
  info: {
    category: CapCategory;
    event: string;
    responseType: 'AllClear' | null;
    severity: CapSeverity;
    onset: string;
    senderName: string;
    headline: string;
    description: string | null;
    parameters: [string, string][];
    area: CapArea | null;
  };
  relay: RelayedAlert | null;
}

export { literal, XML_OPTIONS };

/** The alert as a document of its own (application/cap+xml). */
export function capDocument(alert: OutgoingAlert): string {
  const doc = create(XML_OPTIONS);
  appendAlert(doc, alert);
  return doc.end({ prettyPrint: true });
}

/** Adds the `alert` element (in the CAP namespace) under `parent`: the document itself, or an Atom entry's content. */
export function appendAlert(parent: XMLBuilder, alert: OutgoingAlert): void {
  if (alert.relay) {
    appendRelayedAlert(parent, alert.relay);
    return;
  }
  const root = parent.ele(CAP_NAMESPACE, 'alert');
  const text = (node: XMLBuilder, name: string, value: string | null) => {
    if (value !== null) node.ele(name).txt(literal(value));
  };
  text(root, 'identifier', alert.identifier);
  text(root, 'sender', alert.sender);
  text(root, 'sent', alert.sent);
  text(root, 'status', alert.status);
  text(root, 'msgType', alert.msgType);
  text(root, 'scope', 'Private');
  text(root, 'note', alert.note);
  text(root, 'references', alert.references);
  text(root, 'incidents', alert.incidents);
  const { info } = alert;
  const el = root.ele('info');
  text(el, 'category', info.category);
  text(el, 'event', info.event);
  text(el, 'responseType', info.responseType);
  text(el, 'urgency', 'Immediate');
  text(el, 'severity', info.severity);
  text(el, 'certainty', 'Observed');
  text(el, 'onset', info.onset);
  text(el, 'senderName', info.senderName);
  text(el, 'headline', info.headline);
  text(el, 'description', info.description);
  for (const [name, value] of info.parameters) {
    const parameter = el.ele('parameter');
    text(parameter, 'valueName', name);
    text(parameter, 'value', value);
  }
  if (info.area) {
    const area = el.ele('area');
    text(area, 'areaDesc', info.area.areaDesc);
    text(area, 'circle', info.area.circle);
  }
}
