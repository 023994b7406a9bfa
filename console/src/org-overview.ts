/**
 * The figures of the organizations overview, per organization the key covers: open emergencies (count and
 * highest severity), overdue deliveries and offline base stations. The first FOLLOWED organizations are followed
 * live, a few by their event stream and the rest by polling the event feed (a browser keeps six connections to an
 * HTTP/1.1 server, and the pages need some); the others are read again in turn, slowly. Reads go through
 * pacers so that many organizations stay well inside the key's rate limit.
 */
import { ApiError, allPages, pub, unwrap } from './api';
import { callForAttention } from './attention';
import { type Deliveries, loadDeliveries, openOverdue, withDeliveryEvent } from './deadlines';
import { loadOpenEmergencies, NO_OPEN, type OpenEmergencies, withLoadedOpen, withOpenEvent } from './open-emergencies';
import { RequestPacer } from './request-pacer';
import { OrgStream, type StreamState } from './stream';
import type { DeviceStatus, Org } from './types';

/** Organizations followed live; past them the figures are read again in turn. */
export const FOLLOWED = 50;
/** Event streams held open over HTTP/1.1 (the rest of the followed organizations poll the feed). */
const STREAMS_OVER_HTTP1 = 3;
/** Base station presence is not on the event log: read again this often for the followed organizations. */
const DEVICES_MS = 60_000;
/** The shortest round of the organizations read again in turn. */
const ROUND_MS = 60_000;

export interface OrgSummary {
  org: Org;
  /** How the figures stay current: the live channel's state, or `periodic` when they are read again in turn. */
  following: StreamState | 'periodic';
  /** undefined until first read; null when the key may not read it (shown as "—"). */
  open: OpenEmergencies | null | undefined;
  deliveries: Deliveries | null | undefined;
  offlineDevices: number | null | undefined;
  /** When the figures were last read whole (live ones stay current after it). */
  readAt: Date | null;
  error: string | null;
}

/** Overdue deliveries no completion has settled yet. */
export function overdueCount(deliveries: Deliveries): number {
  let count = 0;
  for (const list of openOverdue(deliveries).values()) count += list.length;
  return count;
}

/** A 403 (the key lacks the read's permission) as null; every other failure stays one. */
function unlessForbidden<T>(read: Promise<T>): Promise<T | null> {
  return read.catch((err) => {
    if (err instanceof ApiError && err.status === 403) return null;
    throw err;
  });
}

async function offlineDevices(orgId: string): Promise<number> {
  const devices = await allPages<DeviceStatus>((cursor) =>
    unwrap(pub().GET('/orgs/{org_id}/devices', { params: { path: { org_id: orgId }, query: { cursor, limit: 200 } } })),
  );
  return devices.filter((d) => !d.online).length;
}

/** How many streams to hold open: HTTP/2 and HTTP/3 share one connection, so every followed organization may stream. */
function streamSlots(): number {
  const navigation = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming | undefined;
  const protocol = navigation?.nextHopProtocol ?? '';
  return protocol === 'h2' || protocol === 'h3' ? FOLLOWED : STREAMS_OVER_HTTP1;
}

export class OrgOverview {
  private readonly summaries = new Map<string, OrgSummary>();
  private readonly streams = new Map<string, OrgStream>();
  /** The followed organizations' reads: a fraction of the default limit of 50 a second. */
  private readonly pacer = new RequestPacer(15, 3);
  /** The other organizations' reads, in the background. */
  private readonly slowPacer = new RequestPacer(2, 1);
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private stopped = false;

  constructor(
    private readonly orgs: Org[],
    private readonly onChange: (summaries: OrgSummary[]) => void,
  ) {
    for (const org of orgs) {
      const following = orgs.indexOf(org) < FOLLOWED ? 'connecting' : 'periodic';
      this.summaries.set(org.orgId, { org, following, open: undefined, deliveries: undefined, offlineDevices: undefined, readAt: null, error: null });
    }
  }

  start(): void {
    const followed = this.orgs.slice(0, FOLLOWED);
    const streamed = streamSlots();
    // Polls spread so that all of them together stay near five reads a second.
    const pollMs = Math.max(2000, (followed.length - streamed) * 200);
    followed.forEach((org, i) => void this.follow(org, i < streamed ? undefined : pollMs));
    void this.readInTurn(this.orgs.slice(FOLLOWED));
    this.every(DEVICES_MS, () => {
      for (const org of followed) {
        if (this.summaries.get(org.orgId)?.offlineDevices == null) continue;
        this.pacer
          .run(() => offlineDevices(org.orgId))
          .then(
            (count) => this.update(org, (s) => ({ ...s, offlineDevices: count })),
            () => undefined,
          );
      }
    });
  }

  stop(): void {
    this.stopped = true;
    for (const stream of this.streams.values()) stream.stop();
    this.streams.clear();
    this.pacer.stop();
    this.slowPacer.stop();
    for (const timer of this.timers) clearTimeout(timer);
  }

  /** Reads the org's figures, then follows its live channel from the offset read first; a key without events:read gets its figures read again in turn. */
  private async follow(org: Org, pollMs: number | undefined): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      let after: number | null;
      try {
        after = await this.read(org, this.pacer);
      } catch (err) {
        this.failed(org, err, this.pacer);
        await this.sleep(Math.min(30_000, 1000 * 2 ** attempt));
        continue;
      }
      if (this.stopped) return;
      if (after === null) {
        this.update(org, (s) => ({ ...s, following: 'periodic' }));
        await this.sleep(ROUND_MS);
        continue;
      }
      const stream = new OrgStream(
        org.orgId,
        after,
        {
          onEvent: (offset, event) => {
            this.update(org, (s) => ({
              ...s,
              open: s.open ? withOpenEvent(s.open, event) : s.open,
              deliveries: s.deliveries ? withDeliveryEvent(s.deliveries, offset, event) : s.deliveries,
            }));
            callForAttention(org, offset, event);
          },
          onState: (state) => this.update(org, (s) => ({ ...s, following: state })),
          onForbidden: (err) => this.update(org, (s) => ({ ...s, following: 'stopped', error: err.message })),
          // Past retention: read the figures again and start over from the newest offset.
          onExpired: () => {
            this.streams.delete(org.orgId);
            void this.follow(org, pollMs);
          },
        },
        pollMs === undefined ? {} : { pollMs },
      );
      this.streams.set(org.orgId, stream);
      stream.start();
      return;
    }
  }

  /** Reads again, one after another through the slow pacer, the organizations past the followed ones. */
  private async readInTurn(orgs: Org[]): Promise<void> {
    while (!this.stopped && orgs.length > 0) {
      const started = Date.now();
      for (const org of orgs) {
        if (this.stopped) return;
        await this.read(org, this.slowPacer).catch((err) => this.failed(org, err, this.slowPacer));
      }
      await this.sleep(Math.max(1000, ROUND_MS - (Date.now() - started)));
    }
  }

  /**
   * Every figure of one org, the newest offset first so that a live channel started from it misses nothing
   * committed during the reads. Returns that offset, or null when the key may not read the org's events.
   */
  private async read(org: Org, pacer: RequestPacer): Promise<number | null> {
    const orgId = org.orgId;
    const after = await unlessForbidden(
      pacer.run(() => unwrap(pub().GET('/orgs/{org_id}/events', { params: { path: { org_id: orgId }, query: { limit: 1 } } }))).then((p) => p.lastOffset),
    );
    const open = await unlessForbidden(pacer.run(() => loadOpenEmergencies(orgId)));
    const deliveries = await unlessForbidden(pacer.run(() => loadDeliveries(orgId)).then((r) => r.deliveries));
    const offline = await unlessForbidden(pacer.run(() => offlineDevices(orgId)));
    this.update(org, (s) => ({
      ...s,
      open: open === null ? null : withLoadedOpen(NO_OPEN, open),
      deliveries,
      offlineDevices: offline,
      readAt: new Date(),
      error: null,
    }));
    return after;
  }

  private failed(org: Org, err: unknown, pacer: RequestPacer): void {
    // 429: the key's rate limit (perhaps shared with other tabs) is reached; hold this pacer's reads a while.
    if (err instanceof ApiError && err.status === 429) pacer.pause(2000);
    this.update(org, (s) => ({ ...s, error: err instanceof Error ? err.message : String(err) }));
  }

  private update(org: Org, change: (summary: OrgSummary) => OrgSummary): void {
    if (this.stopped) return;
    const current = this.summaries.get(org.orgId);
    if (!current) return;
    this.summaries.set(org.orgId, change(current));
    this.onChange([...this.summaries.values()]);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }

  private every(ms: number, run: () => void): void {
    void (async () => {
      while (!this.stopped) {
        await this.sleep(ms);
        if (!this.stopped) run();
      }
    })();
  }
}
