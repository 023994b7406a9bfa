/**
 * How many half-way re-sends each base station may still get: a bucket per device that holds at most
 * `perMinute` re-sends and refills at `perMinute` a minute. An org that declares faster than its devices
 * acknowledge cannot turn each declare into a frame per silent device; the overdue event still names them.
 */
export class ResendAllowance {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perMinute: number) {}

  private tokens(deviceId: string, now: number): number {
    const bucket = this.buckets.get(deviceId);
    if (!bucket) return this.perMinute;
    return Math.min(this.perMinute, bucket.tokens + ((now - bucket.at) * this.perMinute) / 60_000);
  }

  /** Whether the device may get one more re-send now (nothing is taken). */
  allows(deviceId: string, now: number): boolean {
    return this.tokens(deviceId, now) >= 1;
  }

  /** Takes one re-send from the device's allowance; false when none is left. */
  take(deviceId: string, now: number): boolean {
    const tokens = this.tokens(deviceId, now);
    if (tokens < 1) return false;
    this.buckets.set(deviceId, { tokens: tokens - 1, at: now });
    return true;
  }

  /** Drops the buckets of devices no longer connected here, or full again: memory follows the devices being re-sent to. */
  forget(connected: (deviceId: string) => boolean, now: number): void {
    for (const deviceId of this.buckets.keys()) {
      if (!connected(deviceId) || this.tokens(deviceId, now) >= this.perMinute) this.buckets.delete(deviceId);
    }
  }
}
