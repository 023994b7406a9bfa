/**
 * The tenant whose alert path the fair-share benchmark watches (extensions §13): declares of one org, one at a time
 * over one kept-alive connection, each timed from the moment its request is handed to the kernel to the kernel's
 * arrival stamp of its frame at the org's base station (a C device reader, bench/lib/device-swarm.ts). Neither the
 * load generator's event loop nor the abuse it drives in the same process sits between the two instants.
 */
import { DeviceSwarm, monotonicMs } from './device-swarm.js';
import { RawHttpConnection } from './raw-http.js';

/** A frame not at the base station by then is counted missing (its declare was answered 201). */
const FRAME_TIMEOUT_MS = 10_000;
const DECLARE_BODY = JSON.stringify({ description: 'fair-share probe', location: { floorId: '1' } });

/** Declare → frame latencies of one measurement, in milliseconds, with what was refused or lost on the way. */
export interface ProbeFigures {
  p50: number;
  p99: number;
  max: number;
  /** Declares timed to their frame. */
  n: number;
  /** Declares sent, whatever their answer. */
  declares: number;
  /** Answers by status (-1: the connection failed). */
  statuses: Record<string, number>;
  /** Declares answered 201 whose frame never reached the base station. */
  missingFrames: number;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** Quantile q of sorted samples (nearest rank). */
function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export function percentiles(samples: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: round2(quantile(sorted, 0.5)), p99: round2(quantile(sorted, 0.99)), max: round2(sorted.at(-1) ?? Number.NaN) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class TenantProbe {
  private connection: RawHttpConnection | null = null;

  private constructor(
    private readonly base: string,
    private readonly orgId: string,
    private readonly key: string,
    private readonly station: DeviceSwarm,
    /** The org's last event offset: only the probe declares in its org, so each 201 is the next one. */
    private offset: number,
  ) {}

  /** Connects the org's base station (acknowledging every frame, as base stations do) to `gateway` (the REST server unless given). */
  static async open(base: string, orgId: string, key: string, stationToken: string, gateway = base): Promise<TenantProbe> {
    const station = DeviceSwarm.start(1, { ack: true, pong: true });
    await station.connect({ kind: 'device', wsUrl: `${gateway.replace(/^http/, 'ws')}/devices/v1/stream`, tokens: [stationToken] });
    const probe = new TenantProbe(base, orgId, key, station, 0);
    probe.offset = await probe.lastOffset();
    return probe;
  }

  /**
   * Declares for `seconds`, each `gapMs` after the previous one's frame (or refusal); `key` replaces the probe's own key
   * (a key seen for the first time). The gap keeps the probe well within its key's rate limit.
   */
  async measure(seconds: number, gapMs = 25, key = this.key): Promise<ProbeFigures> {
    await this.station.collect();
    const sentAt = new Map<number, number>();
    const statuses: Record<string, number> = {};
    let declares = 0;
    const headers = { authorization: `Bearer ${key}` };
    const end = monotonicMs() + seconds * 1000;
    while (monotonicMs() < end) {
      let status: number;
      let t0 = 0;
      try {
        const connection = await this.open();
        const request = connection.request('POST', `/api/public/v1/orgs/${this.orgId}/emergencies`, headers, DECLARE_BODY);
        t0 = monotonicMs();
        status = (await connection.send(request)).status;
      } catch {
        status = -1;
        this.connection?.close();
        this.connection = null;
        // The declare may have been committed all the same: count from the org's stream again when it answers.
        this.offset = await this.lastOffset().catch(() => this.offset);
      }
      declares++;
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status === 201) {
        this.offset++;
        sentAt.set(this.offset, t0);
        await this.station.received(this.offset, FRAME_TIMEOUT_MS);
      }
      await sleep(gapMs);
    }
    // Frames that came after their wait ended still count, with their real latency.
    if (sentAt.size > 0) await this.station.received(this.offset, FRAME_TIMEOUT_MS);
    const arrivals = await this.station.collect();
    const samples: number[] = [];
    let missingFrames = 0;
    for (const [offset, t0] of sentAt) {
      const arrived = arrivals.get(offset)?.arrived[0];
      if (arrived === undefined) missingFrames++;
      else samples.push(arrived - t0);
    }
    return { ...percentiles(samples), n: samples.length, declares, statuses, missingFrames };
  }

  /** Whether the org's stream ends where the probe counted (else latencies were matched to the wrong frames). */
  async verify(): Promise<string | null> {
    const last = await this.lastOffset();
    return last === this.offset ? null : `the probe's org stream ends at offset ${last}, the probe counted ${this.offset}`;
  }

  async close(): Promise<void> {
    this.connection?.close();
    await this.station.close();
  }

  private async open(): Promise<RawHttpConnection> {
    this.connection ??= await RawHttpConnection.open(this.base);
    return this.connection;
  }

  private async lastOffset(): Promise<number> {
    const res = await fetch(`${this.base}/api/public/v1/orgs/${this.orgId}/events?limit=1`, { headers: { authorization: `Bearer ${this.key}` } });
    if (res.status !== 200) throw new Error(`the probe's event feed answered ${res.status}`);
    return ((await res.json()) as { lastOffset: number }).lastOffset;
  }
}
