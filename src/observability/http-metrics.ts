import type client from 'prom-client';

const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

interface Series {
  labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); the last slot is above the highest bound. */
  perBucket: number[];
}

type Value = { labels: Record<string, string | number>; value: number; metricName?: string };

/**
 * http_requests_total and http_request_duration_seconds, counted in place under one string key per (method, route, status):
 * prom-client's own Counter and Histogram hash the label object on every call.
 */
export class HttpRequestMetrics {
  private readonly series = new Map<string, Series>();

  record(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let series = this.series.get(key);
    if (!series) {
      series = { labels: { method, route, status: String(status) }, count: 0, sum: 0, perBucket: new Array(DURATION_BUCKETS.length + 1).fill(0) };
      this.series.set(key, series);
    }
    series.count++;
    series.sum += seconds;
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]!) i++;
    series.perBucket[i]!++;
  }

  /** The two metrics, to register on a prom-client registry. */
  metrics(): client.Metric[] {
    const counter = {
      name: 'http_requests_total',
      help: 'HTTP requests by route template, method and status.',
      type: 'counter',
      aggregator: 'sum',
      get: async () => ({ ...describe(counter), values: [...this.series.values()].map((s): Value => ({ labels: s.labels, value: s.count })) }),
      reset: () => this.series.clear(),
    };
    const histogram = {
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency by route template, method and status.',
      type: 'histogram',
      aggregator: 'sum',
      get: async () => ({ ...describe(histogram), values: [...this.series.values()].flatMap((s) => histogramValues(histogram.name, s)) }),
      reset: () => this.series.clear(),
    };
    return [counter, histogram] as unknown as client.Metric[];
  }
}

function describe(metric: { name: string; help: string; type: string; aggregator: string }) {
  return { name: metric.name, help: metric.help, type: metric.type, aggregator: metric.aggregator };
}

function histogramValues(name: string, s: Series): Value[] {
  const values: Value[] = [];
  let cumulative = 0;
  DURATION_BUCKETS.forEach((le, i) => {
    cumulative += s.perBucket[i]!;
    values.push({ labels: { le, ...s.labels }, value: cumulative, metricName: `${name}_bucket` });
  });
  values.push({ labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: `${name}_bucket` });
  values.push({ labels: s.labels, value: s.sum, metricName: `${name}_sum` });
  values.push({ labels: s.labels, value: s.count, metricName: `${name}_count` });
  return values;
}
