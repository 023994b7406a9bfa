import client from 'prom-client';
import { HttpRequestMetrics } from './http-metrics.js';

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

  constructor() {
    client.collectDefaultMetrics({ register: this.registry });
    for (const metric of this.http.metrics()) this.registry.registerMetric(metric);
  }

  recordHttp(method: string, route: string, status: number, seconds: number): void {
    this.http.record(method, route, status, seconds);
  }
}
