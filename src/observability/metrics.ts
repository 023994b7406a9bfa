import client from 'prom-client';
import type { OrgAckLags, UnacknowledgedDevices } from '../domain/devices/receipt-gauges.js';
import { HttpRequestMetrics } from './http-metrics.js';

export interface ReceiptReaders {
  ackLags(limit: number): Promise<OrgAckLags>;
  unacknowledged(limit: number): Promise<UnacknowledgedDevices>;
}

/** Labelled series of device_ack_lag_events at most (the orgs furthest behind); the rest is one `other` series. */
export const ORG_SERIES_LIMIT = 50;
/** Labelled series of emergency_unacknowledged_devices at most; the rest is one `other` series. */
export const EMERGENCY_SERIES_LIMIT = 100;
/** How long one database read of the receipt gauges serves every scrape. */
export const RECEIPT_GAUGES_TTL_MS = 5_000;
/** The label value of the series that summarises what the limits leave out. */
const OTHER = 'other';

interface ReceiptSnapshot {
  lags: OrgAckLags;
  unacknowledged: UnacknowledgedDevices;
}

/** Every Prometheus metric of the process, on its own registry so that several app instances in one test process do not collide. */
export class Metrics {
  readonly registry = new client.Registry();

  /** Request counts and latencies (see HttpRequestMetrics). */
  private readonly http = new HttpRequestMetrics();

  readonly webhookAttempts = new client.Counter({
    name: 'webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts by result (success, retry, failed, disabled).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly webhookLag = new client.Histogram({
    name: 'webhook_delivery_lag_seconds',
    help: 'Time from the event commit to the first delivery attempt.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300],
    registers: [this.registry],
  });

  readonly webhookDnsLookupsInFlight = new client.Gauge({
    name: 'webhook_dns_lookups_in_flight',
    help: 'DNS lookups of webhook target names running now (at most WEBHOOK_DNS_MAX_IN_FLIGHT).',
    registers: [this.registry],
  });

  readonly devicesConnected = new client.Gauge({
    name: 'devices_connected',
    help: 'Base-station devices connected to this instance.',
    registers: [this.registry],
  });

  readonly deviceEventLatency = new client.Histogram({
    name: 'device_event_latency_seconds',
    help: 'Time from the event commit to the frame being written to a device socket.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
    registers: [this.registry],
  });

  readonly fullAcknowledgement = new client.Histogram({
    name: 'event_full_acknowledgement_seconds',
    help:
      'For emergency events with an acknowledgement deadline, the time from the event to the acknowledgement of the last base ' +
      'station it targets (observed at the deadline when all had acknowledged, else when the last one did).',
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14_400, 86_400],
    registers: [this.registry],
  });

  readonly deliveryOverdue = new client.Counter({
    name: 'emergency_delivery_overdue_total',
    help: 'emergency.delivery_overdue events appended, by the type of the event that went unacknowledged.',
    labelNames: ['event_type'] as const,
    registers: [this.registry],
  });

  readonly deliveryCompleted = new client.Counter({
    name: 'emergency_delivery_completed_total',
    help: 'emergency.delivery_completed events appended (an overdue event acknowledged by every base station it targets).',
    labelNames: ['event_type'] as const,
    registers: [this.registry],
  });

  readonly deviceResends = new client.Counter({
    name: 'device_event_resends_total',
    help: 'Event frames sent again to a connected base station that had not acknowledged them half-way to their deadline.',
    registers: [this.registry],
  });

  readonly deviceResendsLimited = new client.Counter({
    name: 'device_event_resends_limited_total',
    help: 'Re-sends not made because the base station had reached ACK_RESENDS_PER_DEVICE_PER_MINUTE (it still gets the overdue event).',
    registers: [this.registry],
  });

  readonly deliveryWatchChecks = new client.Counter({
    name: 'emergency_delivery_watch_checks_total',
    help: 'Overdue events looked at for completion: once when they go overdue, then only when an acknowledgement or a revocation could have completed them.',
    registers: [this.registry],
  });

  readonly deviceReplayReads = new client.Counter({
    name: 'device_replay_reads_total',
    help: 'Database reads of event pages for followers catching up (devices resuming with after, event streams with Last-Event-ID); one read serves every follower resuming in the same range.',
    registers: [this.registry],
  });

  /** Read from the database for the scrapes (see readReceiptsWith). */
  private receiptReaders: ReceiptReaders | null = null;
  /** The latest read, shared by every scrape for RECEIPT_GAUGES_TTL_MS (a read still running included). */
  private receiptSnapshot: { at: number; value: Promise<ReceiptSnapshot | null> } | null = null;

  readonly deviceAckLag: client.Gauge<'org_id'> = new client.Gauge({
    name: 'device_ack_lag_events',
    help:
      `Per organization, the events its furthest-behind active base station has not acknowledged (newest offset minus acknowledged offset); ` +
      `the ${ORG_SERIES_LIMIT} organizations furthest behind, the largest lag of the others as org_id="${OTHER}".`,
    labelNames: ['org_id'] as const,
    registers: [this.registry],
    collect: (): Promise<void> =>
      this.refresh(this.deviceAckLag, ({ lags }) => [
        ...lags.top.map((r): [Partial<Record<'org_id', string>>, number] => [{ org_id: r.orgId }, r.lag]),
        ...(lags.restLag === null ? [] : [[{ org_id: OTHER }, lags.restLag] as [Partial<Record<'org_id', string>>, number]]),
      ]),
  });

  readonly unacknowledgedDevices: client.Gauge<'org_id' | 'emergency_id'> = new client.Gauge({
    name: 'emergency_unacknowledged_devices',
    help:
      `Per emergency not yet resolved, the active base stations that have not acknowledged its latest event; the ${EMERGENCY_SERIES_LIMIT} ` +
      `emergencies with the most, the others summed as org_id="${OTHER}",emergency_id="${OTHER}".`,
    labelNames: ['org_id', 'emergency_id'] as const,
    registers: [this.registry],
    collect: (): Promise<void> =>
      this.refresh(this.unacknowledgedDevices, ({ unacknowledged }) => [
        ...unacknowledged.top.map((r): [Partial<Record<'org_id' | 'emergency_id', string>>, number] => [
          { org_id: r.orgId, emergency_id: r.emergencyId },
          r.devices,
        ]),
        ...(unacknowledged.restDevices === null
          ? []
          : [[{ org_id: OTHER, emergency_id: OTHER }, unacknowledged.restDevices] as [Partial<Record<'org_id' | 'emergency_id', string>>, number]]),
      ]),
  });

  /** Where the receipt gauges read their values (the database), set once the context exists. */
  readReceiptsWith(readers: ReceiptReaders): void {
    this.receiptReaders = readers;
    this.receiptSnapshot = null;
  }

  /** One database read serves every scrape (and both gauges) for a while, so /metrics' database work does not grow with the scrapers. */
  private receipts(): Promise<ReceiptSnapshot | null> {
    const readers = this.receiptReaders;
    if (!readers) return Promise.resolve(null);
    const now = Date.now();
    if (this.receiptSnapshot && now - this.receiptSnapshot.at < RECEIPT_GAUGES_TTL_MS) return this.receiptSnapshot.value;
    const value = (async () => ({
      lags: await readers.ackLags(ORG_SERIES_LIMIT),
      unacknowledged: await readers.unacknowledged(EMERGENCY_SERIES_LIMIT),
    }))().catch(
      // The database is unavailable: its outage is reported by the requests that need it.
      () => null,
    );
    this.receiptSnapshot = { at: now, value };
    return value;
  }

  /** Replaces a gauge's series with fresh values; when the read failed the last values stay (a scrape never fails on it). */
  private async refresh<L extends string>(
    gauge: client.Gauge<L>,
    values: (snapshot: ReceiptSnapshot) => [Partial<Record<L, string>>, number][],
  ): Promise<void> {
    const snapshot = await this.receipts();
    if (!snapshot) return;
    gauge.reset();
    for (const [labels, value] of values(snapshot)) gauge.set(labels, value);
  }

  constructor() {
    client.collectDefaultMetrics({ register: this.registry });
    for (const metric of this.http.metrics()) this.registry.registerMetric(metric);
  }

  recordHttp(method: string, route: string, status: number, seconds: number): void {
    this.http.record(method, route, status, seconds);
  }
}
