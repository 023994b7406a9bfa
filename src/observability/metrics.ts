import client from 'prom-client';

/**
 * Every Prometheus metric of the process, on its own registry (so several app instances in one test
 * process do not collide). Components record into these; GET /metrics renders them.
 */
export class Metrics {
  readonly registry = new client.Registry();

  readonly httpRequests = new client.Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route template, method and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by route template, method and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

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
  }

  /**
   * The label children of each (method, route, status), resolved once: prom-client otherwise hashes
   * the label object on every request. Bounded by the route table times the statuses in use.
   */
  private readonly httpChildren = new Map<string, { count: client.Counter.Internal; duration: client.Histogram.Internal<string> }>();

  recordHttp(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let children = this.httpChildren.get(key);
    if (!children) {
      const labels = { method, route, status: String(status) };
      children = { count: this.httpRequests.labels(labels), duration: this.httpDuration.labels(labels) };
      this.httpChildren.set(key, children);
    }
    children.count.inc();
    children.duration.observe(seconds);
  }
}
