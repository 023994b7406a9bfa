import client from 'prom-client';
import { HttpRequestMetrics } from './http-metrics.js';

export interface ReceiptReaders {
  ackLags(): Promise<{ orgId: string; lag: number }[]>;
  unacknowledged(): Promise<{ orgId: string; emergencyId: string; devices: number }[]>;
}

/**
 * Every Prometheus metric of the process, on its own registry (so several app instances in one test
 * process do not collide). Components record into these; GET /metrics renders them.
 */
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

  /** Read from the database at each scrape (see readReceiptsWith). */
  private receiptReaders: ReceiptReaders | null = null;

  readonly deviceAckLag: client.Gauge<'org_id'> = new client.Gauge({
    name: 'device_ack_lag_events',
    help: 'Per organization, the events its furthest-behind active base station has not acknowledged (newest offset minus acknowledged offset).',
    labelNames: ['org_id'] as const,
    registers: [this.registry],
    collect: (): Promise<void> => this.refresh(this.deviceAckLag, async (readers) => (await readers.ackLags()).map((r) => [{ org_id: r.orgId }, r.lag])),
  });

  readonly unacknowledgedDevices: client.Gauge<'org_id' | 'emergency_id'> = new client.Gauge({
    name: 'emergency_unacknowledged_devices',
    help: 'Per emergency not yet resolved, the active base stations that have not acknowledged its latest event.',
    labelNames: ['org_id', 'emergency_id'] as const,
    registers: [this.registry],
    collect: (): Promise<void> =>
      this.refresh(this.unacknowledgedDevices, async (readers) =>
        (await readers.unacknowledged()).map((r) => [{ org_id: r.orgId, emergency_id: r.emergencyId }, r.devices]),
      ),
  });

  /** Where the receipt gauges read their values (the database), set once the context exists. */
  readReceiptsWith(readers: ReceiptReaders): void {
    this.receiptReaders = readers;
  }

  /** Replaces a gauge's series with fresh values; when the read fails the last values stay (a scrape never fails on it). */
  private async refresh<L extends string>(
    gauge: client.Gauge<L>,
    read: (readers: ReceiptReaders) => Promise<[Partial<Record<L, string>>, number][]>,
  ): Promise<void> {
    if (!this.receiptReaders) return;
    try {
      const values = await read(this.receiptReaders);
      gauge.reset();
      for (const [labels, value] of values) gauge.set(labels, value);
    } catch {
      // The database is unavailable: its outage is reported by the requests that need it.
    }
  }

  constructor() {
    client.collectDefaultMetrics({ register: this.registry });
    for (const metric of this.http.metrics()) this.registry.registerMetric(metric);
  }

  recordHttp(method: string, route: string, status: number, seconds: number): void {
    this.http.record(method, route, status, seconds);
  }
}
