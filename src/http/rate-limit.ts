import type { FastifyReply } from 'fastify';
import { AppError } from '../errors.js';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** Seconds until one request is allowed again (only when refused). */
  retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * Token bucket per API key: `ratePerSecond` tokens a second, holding at most twice that (the burst).
 * Buckets live in this process, so N instances behind a load balancer allow up to N times the rate;
 * the README says so. Idle buckets are dropped so the map stays bounded by active keys.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly capacity: number;
  private lastSweep = Date.now();

  constructor(private readonly ratePerSecond: number) {
    this.capacity = Math.max(1, Math.round(ratePerSecond * 2));
  }

  take(key: string, now = Date.now()): RateDecision {
    this.sweep(now);
    const bucket = this.buckets.get(key) ?? { tokens: this.capacity, updatedAt: now };
    bucket.tokens = Math.min(this.capacity, bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.ratePerSecond);
    bucket.updatedAt = now;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    return {
      allowed,
      limit: this.capacity,
      remaining: Math.floor(bucket.tokens),
      resetSeconds: Math.ceil((this.capacity - bucket.tokens) / this.ratePerSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / this.ratePerSecond)),
    };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    const fullAfterMs = (this.capacity / this.ratePerSecond) * 1000;
    for (const [key, bucket] of this.buckets) if (now - bucket.updatedAt > fullAfterMs) this.buckets.delete(key);
  }
}

/** Sets the RateLimit-* headers and refuses with 429 rate_limited (+ Retry-After) when the bucket is empty. */
export function enforceRateLimit(limiter: RateLimiter, keyId: string, reply: FastifyReply): void {
  const decision = limiter.take(keyId);
  reply.header('ratelimit-limit', decision.limit);
  reply.header('ratelimit-remaining', decision.remaining);
  reply.header('ratelimit-reset', decision.resetSeconds);
  if (!decision.allowed) {
    reply.header('retry-after', decision.retryAfterSeconds);
    throw new AppError('rate_limited', `Too many requests for this API key; retry after ${decision.retryAfterSeconds} s.`);
  }
}
