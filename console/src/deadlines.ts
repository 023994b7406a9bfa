/**
 * Acknowledgement deadlines as the console shows them. An event a base station has not acknowledged by its
 * deadline is followed by `emergency.delivery_overdue` (naming the silent stations) and, once every station has
 * acknowledged it, by `emergency.delivery_completed`; both name the watched event by its offset.
 */
import { pub, unwrap } from './api';
import type { DeliveryCompletedData, DeliveryOverdueData, Emergency, EventEnvelope, FeedItem } from './types';

// Checked against the event types of the API's typed client (generated from the OpenAPI document, itself from the service's one list).
export const OVERDUE = 'emergency.delivery_overdue' satisfies EventEnvelope['eventType'];
export const COMPLETED = 'emergency.delivery_completed' satisfies EventEnvelope['eventType'];

/** The emergency after a transition (declared, categorized, resolved); null for every other event type. */
export function changedEmergency(event: EventEnvelope): Emergency | null {
  switch (event.eventType) {
    case 'emergency.declared':
    case 'emergency.categorized':
    case 'emergency.resolved':
      return event.data?.emergency ?? null;
    default:
      return null;
  }
}

export interface OverdueDelivery {
  /** The delivery_overdue event's own offset and time. */
  offset: number;
  createdAt: string;
  data: DeliveryOverdueData;
}

export interface CompletedDelivery {
  offset: number;
  createdAt: string;
  data: DeliveryCompletedData;
}

/**
 * Overdue deliveries and the completions that settled them, by the watched event's offset. A completion
 * settles its watched event for good, whatever the order the two arrive in, so the feed read on load and the
 * live channel may overlap or interleave without a settled delivery showing as overdue again.
 */
export interface Deliveries {
  overdue: ReadonlyMap<number, OverdueDelivery>;
  completed: ReadonlyMap<number, CompletedDelivery>;
}

export const NO_DELIVERIES: Deliveries = { overdue: new Map(), completed: new Map() };

/** `deliveries` with one more event applied; the same object when the event is of another type. */
export function withDeliveryEvent(deliveries: Deliveries, offset: number, event: EventEnvelope): Deliveries {
  if (event.eventType === OVERDUE) {
    const overdue = new Map(deliveries.overdue).set(event.data.eventOffset, { offset, createdAt: event.createdAt, data: event.data });
    return { ...deliveries, overdue };
  }
  if (event.eventType === COMPLETED) {
    const completed = new Map(deliveries.completed).set(event.data.eventOffset, { offset, createdAt: event.createdAt, data: event.data });
    return { ...deliveries, completed };
  }
  return deliveries;
}

export function deliveriesOf(items: FeedItem[], start: Deliveries = NO_DELIVERIES): Deliveries {
  return items.reduce((d, item) => withDeliveryEvent(d, item.offset, item.event), start);
}

/** Two reads of the deadline events together (the feed on load, the live channel): every overdue and completion either holds. */
export function mergeDeliveries(a: Deliveries, b: Deliveries): Deliveries {
  return { overdue: new Map([...a.overdue, ...b.overdue]), completed: new Map([...a.completed, ...b.completed]) };
}

/** The overdue deliveries no completion has settled yet, by emergency id (oldest watched event first). */
export function openOverdue(deliveries: Deliveries): Map<string, OverdueDelivery[]> {
  const byEmergency = new Map<string, OverdueDelivery[]>();
  const open = [...deliveries.overdue.entries()].filter(([watched]) => !deliveries.completed.has(watched)).sort(([a], [b]) => a - b);
  for (const [, delivery] of open) {
    const list = byEmergency.get(delivery.data.emergencyId);
    if (list) list.push(delivery);
    else byEmergency.set(delivery.data.emergencyId, [delivery]);
  }
  return byEmergency;
}

/** Pages of 500 read at most on load: deadline events are few, and the bound keeps a board's load small. */
const MAX_PAGES = 10;

/**
 * The org's delivery_overdue and delivery_completed events from the feed (every retained one, up to the bound),
 * read once when the board opens; the live channel brings the later ones. `complete` is false when the bound
 * cut the read short.
 */
export async function loadDeliveries(orgId: string, signal?: AbortSignal): Promise<{ deliveries: Deliveries; complete: boolean }> {
  let deliveries = NO_DELIVERIES;
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await unwrap(
      pub().GET('/orgs/{org_id}/events', {
        params: { path: { org_id: orgId }, query: { eventType: `${OVERDUE},${COMPLETED}`, limit: 500, cursor } },
        signal,
      }),
    );
    deliveries = deliveriesOf(result.items as FeedItem[], deliveries);
    cursor = result.nextCursor ?? undefined;
    if (!cursor) return { deliveries, complete: true };
  }
  return { deliveries, complete: false };
}

/** "1 of 2 base stations silent" from an overdue event's counts. */
export function silentSummary(data: DeliveryOverdueData): string {
  return `${data.silentDevicesTotal} of ${data.targeted} base station${data.targeted === 1 ? '' : 's'} silent`;
}

/** A duration in ms as "850 ms", "12 s", "3 min 5 s". */
export function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min${seconds % 60 ? ` ${seconds % 60} s` : ''}`;
  return `${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
}

/** A deadline in seconds as the settings show it: "30 s", "2 min", "1 h". */
export function deadlineText(seconds: number | null): string {
  return seconds === null ? 'Off' : duration(seconds * 1000);
}
