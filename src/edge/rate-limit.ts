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
 * Token bucket per API key and process (N instances allow N times the rate, as the README says); idle buckets are dropped. Not
 * @fastify/rate-limit: it counts requests, while a JSON-RPC batch pays one token per tool call, all or nothing (extensions §1b).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly capacity: number;
  private lastSweep = Date.now();

  constructor(
    private readonly ratePerSecond: number,
    burst = ratePerSecond * 2,
  ) {
    this.capacity = Math.max(1, Math.round(burst));
  }

  /** Whether `take` would allow one more now, without taking it. */
  wouldAllow(key: string, now = Date.now()): boolean {
    const bucket = this.buckets.get(key);
    return !bucket || bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.ratePerSecond >= 1;
  }

  /** Takes `cost` tokens, all or none, so a batch of tool calls pays for each and is refused whole when the bucket cannot cover it. */
  take(key: string, now = Date.now(), cost = 1): RateDecision {
    this.sweep(now);
    const bucket = this.buckets.get(key) ?? { tokens: this.capacity, updatedAt: now };
    bucket.tokens = Math.min(this.capacity, bucket.tokens + ((now - bucket.updatedAt) / 1000) * this.ratePerSecond);
    bucket.updatedAt = now;
    const allowed = bucket.tokens >= cost;
    if (allowed) bucket.tokens -= cost;
    this.buckets.set(key, bucket);
    // A cost above the burst can never be covered; waiting for a full bucket is the best advice.
    const wanted = Math.min(cost, this.capacity);
    return {
      allowed,
      limit: this.capacity,
      remaining: Math.floor(bucket.tokens),
      resetSeconds: Math.ceil((this.capacity - bucket.tokens) / this.ratePerSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((wanted - bucket.tokens) / this.ratePerSecond)),
    };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    const fullAfterMs = (this.capacity / this.ratePerSecond) * 1000;
    for (const [key, bucket] of this.buckets) if (now - bucket.updatedAt > fullAfterMs) this.buckets.delete(key);
  }
}

/** Sets the RateLimit-* headers and refuses with 429 rate_limited (+ Retry-After) when the bucket cannot pay `cost`. */
export function enforceRateLimit(limiter: RateLimiter, keyId: string, reply: FastifyReply, cost = 1): void {
  const decision = limiter.take(keyId, Date.now(), cost);
  reply.header('ratelimit-limit', decision.limit);
  reply.header('ratelimit-remaining', decision.remaining);
  reply.header('ratelimit-reset', decision.resetSeconds);
  if (!decision.allowed) {
    reply.header('retry-after', decision.retryAfterSeconds);
    throw new AppError(
      'rate_limited',
      cost === 1
        ? `Too many requests for this API key; retry after ${decision.retryAfterSeconds} s.`
        : `This batch holds ${cost} tool calls and the rate limit of this API key has ${decision.remaining} left (burst ${decision.limit}); nothing ran. Retry after ${decision.retryAfterSeconds} s, or send fewer calls per batch.`,
    );
  }
}
