import { timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Principal } from '../access/principal.js';
import { sha256 } from '../shared/secrets.js';

const CACHE_TTL_MS = 2_000;
/** Keys kept verified in memory; beyond it the least recently used one is read again when next used. */
const CACHE_MAX_KEYS = 50_000;
/** Key ids that name no key are remembered this long, so repeating one costs no lookup. */
const UNKNOWN_KEY_TTL_MS = 10_000;
const UNKNOWN_KEYS_MAX = 100_000;
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

/** One kind of bearer key (API keys, admin keys): how it looks, where it is stored, whom it makes the caller. */
export interface KeyKind<Row> {
  /** The whole key; group 1 is the public id part, the lookup index. */
  pattern: RegExp;
  lookup(prefix: string): Promise<Row | undefined>;
  secretHashOf(row: Row): string;
  usable(row: Row, now: number): boolean;
  principalOf(row: Row): Principal;
  /** Best-effort, off the request path: last-used times are informational, at one-minute precision. */
  markUsed(row: Row, at: string): Promise<unknown>;
}

/** What the authentication of a request asks of one kind of bearer credential. */
export interface CredentialVerifier {
  /** Whether the text has this kind's form. */
  matches(plaintext: string): boolean;
  authenticate(plaintext: string): Promise<Principal | null>;
  /** The verdict as of now, past any cache, for a credential that stays in use. */
  authenticateFresh(plaintext: string): Promise<Principal | null>;
  /** The verdict without waiting when it is known; undefined when it must be worked out first. */
  authenticateCached(plaintext: string): Principal | null | undefined;
  /** The public id part: the failed-authentication throttle's bucket. */
  idOf(plaintext: string): string | undefined;
  /** Whether this id part was seen before: its check is never throttled. */
  knowsKeyIdOf(plaintext: string): boolean;
}

interface CachedKey<Row> {
  row: Row;
  /** The stored hash decoded once, for the comparison every request makes. */
  secretHash: Buffer;
  /** The principal built from `row`, shared by the requests served from this entry (it is immutable). */
  principal?: Principal;
  fetchedAt: number;
  lastUsedWrittenAt: number;
}

/**
 * Verifies bearer keys of one kind: one indexed lookup by the public id (cached for a few seconds, so a
 * revocation takes effect within that time), then a constant-time comparison of SHA-256 digests.
 */
export class CachedKeyVerifier<Row> implements CredentialVerifier {
  /** Keys that exist, least recently used evicted first: a flood of other ids cannot push them out. */
  private readonly cache = new LRUCache<string, CachedKey<Row>>({ max: CACHE_MAX_KEYS });
  /** Key ids looked up and not found (made-up or deleted), apart from the real ones, for a short time. */
  private readonly unknown = new LRUCache<string, true>({ max: UNKNOWN_KEYS_MAX, ttl: UNKNOWN_KEY_TTL_MS, ttlAutopurge: false });

  constructor(private readonly kind: KeyKind<Row>) {}

  matches(plaintext: string): boolean {
    return this.kind.pattern.test(plaintext);
  }

  async authenticate(plaintext: string): Promise<Principal | null> {
    const cached = this.authenticateCached(plaintext);
    if (cached !== undefined) return cached;
    return this.read(plaintext, this.kind.pattern.exec(plaintext)![1]!);
  }

  /**
   * The verdict on the row as stored now, for a credential that stays in use (a live stream), so that a revocation, expiry or
   * change made by any process is seen at once. The row read replaces the cached one.
   */
  async authenticateFresh(plaintext: string): Promise<Principal | null> {
    const match = this.kind.pattern.exec(plaintext);
    return match ? this.read(plaintext, match[1]!) : null;
  }

  private async read(plaintext: string, prefix: string): Promise<Principal | null> {
    const now = Date.now();
    const row = await this.kind.lookup(prefix);
    if (!row) {
      this.cache.delete(prefix);
      this.unknown.set(prefix, true);
      return null;
    }
    const entry = {
      row,
      secretHash: Buffer.from(this.kind.secretHashOf(row), 'hex'),
      fetchedAt: now,
      lastUsedWrittenAt: this.cache.get(prefix)?.lastUsedWrittenAt ?? 0,
    };
    this.cache.set(prefix, entry);
    return this.verify(plaintext, entry, now);
  }

  /** The public id part of this key; undefined when it is not a key of this kind. */
  idOf(plaintext: string): string | undefined {
    return this.kind.pattern.exec(plaintext)?.[1];
  }

  /** Whether the id part of this key names a key read before (fresh or not): its lookup is never throttled. */
  knowsKeyIdOf(plaintext: string): boolean {
    const match = this.kind.pattern.exec(plaintext);
    return match !== null && this.cache.has(match[1]!);
  }

  /** The verdict without waiting when the row is cached and fresh; undefined when it must be read first. */
  authenticateCached(plaintext: string): Principal | null | undefined {
    const match = this.kind.pattern.exec(plaintext);
    if (!match) return null;
    const now = Date.now();
    const prefix = match[1]!;
    const entry = this.cache.get(prefix);
    if (!entry) return this.unknown.has(prefix) ? null : undefined;
    if (now - entry.fetchedAt > CACHE_TTL_MS) return undefined;
    return this.verify(plaintext, entry, now);
  }

  private verify(plaintext: string, entry: CachedKey<Row>, now: number): Principal | null {
    if (!timingSafeEqual(sha256(plaintext), entry.secretHash)) return null;
    if (!this.kind.usable(entry.row, now)) return null;
    if (now - entry.lastUsedWrittenAt > LAST_USED_WRITE_INTERVAL_MS) {
      entry.lastUsedWrittenAt = now;
      this.kind.markUsed(entry.row, new Date(now).toISOString()).catch(() => undefined);
    }
    entry.principal ??= this.kind.principalOf(entry.row);
    return entry.principal;
  }
}
