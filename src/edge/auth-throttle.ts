import { addressGroupOf } from './client-address.js';
import type { PrefixIndex } from './prefix-index.js';
import { type RateDecision, RateLimiter } from './rate-limit.js';

/**
 * Failed authentication, throttled per (client address, credential id part) so that a flood of bad tokens from one address
 * (many clients behind one NAT or proxy share it) locks out neither a valid key nor a device this process has not seen yet:
 * - a failure takes from the bucket of its (address, id part); a pair out of tokens gets 429 before any lookup;
 * - looking up an id part this process has not read before takes from the address's lookup budget; once that is spent, the
 *   id part is looked up only when the index of stored credentials holds it, and made-up ones get 429 without a query.
 * Both buckets refill at AUTH_FAILURES_PER_ADDRESS a second, with a burst of five seconds' worth.
 */
export class AuthThrottle {
  private readonly failures: RateLimiter;
  private readonly lookups: RateLimiter;

  constructor(
    perSecond: number,
    /** Tells existing id parts from made-up ones once an address has spent its lookups; without it they are refused. */
    private readonly index?: PrefixIndex,
  ) {
    this.failures = new RateLimiter(perSecond, perSecond * 5);
    this.lookups = new RateLimiter(perSecond, perSecond * 5);
  }

  /**
   * Whether the credential with this id part may be looked up: null when it may, the refusal (429) otherwise. `known`: a
   * credential with this id part was read before by this process.
   */
  async lookupRefusal(address: string, prefix: string, known: boolean): Promise<RateDecision | null> {
    const group = addressGroupOf(address);
    const pair = `${group} ${prefix}`;
    // A refused take leaves the bucket as it was: it only reports when to retry.
    if (!this.failures.wouldAllow(pair)) return this.failures.take(pair);
    if (known) return null;
    const budget = this.lookups.take(group);
    if (budget.allowed) return null;
    if (this.index !== undefined && (await this.index.has(prefix))) return null;
    return budget;
  }

  /** A credential whose id part is known to name nothing (remembered from a lookup): charged to the address's lookup budget. */
  madeUp(address: string): RateDecision {
    return this.lookups.take(addressGroupOf(address));
  }

  /** A failed authentication (`prefix` undefined: no credential, or one of no known form); refused: answer 429 rather than 401. */
  failed(address: string, prefix: string | undefined): RateDecision {
    return this.failures.take(`${addressGroupOf(address)} ${prefix ?? '-'}`);
  }
}
