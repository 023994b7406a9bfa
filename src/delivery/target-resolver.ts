import { AsyncLocalStorage } from 'node:async_hooks';
import { type LookupAddress, type RecordWithTtl, Resolver } from 'node:dns';
import { isIP } from 'node:net';
import { LRUCache } from 'lru-cache';
import type { AppContext } from '../context.js';
import { isPublicAddress, nonPublicAddressReason } from '../domain/outbound/public-host.js';
import { FairSlots, SlotWaitTimeout } from './fair-slots.js';

export const DEFAULT_DNS_TIMEOUT_MS = 3000;
export const DEFAULT_DNS_MAX_IN_FLIGHT = 32;
/** Positive answers are cached for their TTL, within these bounds (a TTL of 0 would mean a lookup per request). */
export const MIN_ANSWER_TTL_MS = 1000;
export const MAX_ANSWER_TTL_MS = 300_000;
/** A failed lookup is answered from memory this long (RFC 9520 asks resolvers to cache resolution failures). */
export const FAILURE_TTL_MS = 30_000;
/** A name that failed within this time waits behind its tenant's other names for a lookup slot. */
const SUSPECT_TTL_MS = 600_000;
/** Once one address family answered, how long the other may still take (RFC 8305's resolution delay). */
const RESOLUTION_DELAY_MS = 50;
const MAX_REMEMBERED_NAMES = 10_000;

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
  /** Milliseconds. */
  ttl: number;
}

/** A target refused by the policy on addresses (WEBHOOK_ALLOW_PRIVATE_TARGETS unset); the message says why. */
export class NonPublicAddressError extends Error {
  readonly code = 'EWEBHOOK_NON_PUBLIC';
}

/** No answer within the deadline, or no lookup slot free within it. */
export class DnsTimeoutError extends Error {
  readonly code = 'EWEBHOOK_DNS_TIMEOUT';
}

/** The name servers answered with an error (no such name, no address, server failure, refused). */
export class DnsLookupError extends Error {
  readonly code = 'EWEBHOOK_DNS';
  constructor(readonly dnsCode: string) {
    super(`DNS lookup failed (${dnsCode})`);
  }
}

export interface TargetResolverOptions {
  allowPrivateTargets: boolean;
  /** Name servers as `ip`, `ip:port` or `[ipv6]:port`; empty: the system's (resolv.conf). */
  servers?: readonly string[];
  /** Deadline of one name's lookup, both address families together. */
  timeoutMs?: number;
  /**
   * Lookups of distinct names running at once in this process; more wait for a slot (up to the deadline).
   * One tenant may hold at most half of them.
   */
  maxInFlight?: number;
  /** Told the number of lookups in flight whenever it changes (the metrics gauge). */
  onInFlight?: (count: number) => void;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * Resolves webhook target names with a deadline and a bounded number of lookups shared fairly between
 * tenants (see `asTenant`), so that one subscriber's unresolvable names cannot hold up another's deliveries.
 * It queries through c-ares (`dns.Resolver`) because `dns.lookup` runs in libuv's small shared thread pool
 * and cannot be cancelled.
 */
export class TargetResolver {
  private readonly allowPrivateTargets: boolean;
  private readonly servers: readonly string[];
  private readonly timeoutMs: number;
  private readonly slots: FairSlots;
  private readonly pending = new Map<string, Promise<ResolvedAddress[]>>();
  private readonly failures = new LRUCache<string, Error>({ max: MAX_REMEMBERED_NAMES, ttl: FAILURE_TTL_MS });
  private readonly suspects = new LRUCache<string, true>({ max: MAX_REMEMBERED_NAMES, ttl: SUSPECT_TTL_MS });

  constructor(options: TargetResolverOptions) {
    this.allowPrivateTargets = options.allowPrivateTargets;
    this.servers = options.servers ?? [];
    this.timeoutMs = options.timeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
    const maxInFlight = options.maxInFlight ?? DEFAULT_DNS_MAX_IN_FLIGHT;
    this.slots = new FairSlots(maxInFlight, Math.ceil(maxInFlight / 2), options.onInFlight);
  }

  /** Lookups of distinct names running now. */
  get inFlight(): number {
    return this.slots.inUse;
  }

  /** Runs `fn` with lookups it starts counted against `tenant`'s share of the lookup slots. */
  static asTenant<T>(tenant: string, fn: () => T): T {
    return lookupTenant.run(tenant, fn);
  }

  /** The public addresses of a name (or of an IP literal, checked), or a DnsTimeoutError, DnsLookupError or NonPublicAddressError. */
  resolve(hostname: string): Promise<ResolvedAddress[]> {
    const name = hostname
      .replace(/^\[(.*)\]$/, '$1')
      .replace(/\.$/, '')
      .toLowerCase();
    const family = isIP(name);
    if (family !== 0) return this.checked(name, [{ address: name, family: family as 4 | 6, ttl: MAX_ANSWER_TTL_MS }]);
    // RFC 6761: localhost names are loopback, without asking the name servers.
    if (name === 'localhost' || name.endsWith('.localhost')) {
      return this.checked(name, [
        { address: '127.0.0.1', family: 4, ttl: MAX_ANSWER_TTL_MS },
        { address: '::1', family: 6, ttl: MAX_ANSWER_TTL_MS },
      ]);
    }
    const failure = this.failures.get(name);
    if (failure) return Promise.reject(failure);
    let lookup = this.pending.get(name);
    if (!lookup) {
      lookup = this.lookUp(name, lookupTenant.getStore() ?? '').finally(() => this.pending.delete(name));
      this.pending.set(name, lookup);
    }
    return lookup.then((addresses) => this.checked(name, addresses));
  }

  /** The `lookup` of undici's DNS interceptor: fresh records per call (the interceptor stamps them). */
  readonly interceptorLookup = (origin: URL, _options: unknown, callback: (err: NodeJS.ErrnoException | null, addresses: ResolvedAddress[]) => void): void => {
    this.resolve(origin.hostname).then(
      (addresses) =>
        callback(
          null,
          addresses.map((a) => ({ ...a })),
        ),
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };

  /** The `lookup` of net.connect, for any connection made by name (never the shared thread pool). */
  readonly connectLookup = (hostname: string, options: { all?: boolean; family?: number } | undefined, callback: LookupCallback): void => {
    this.resolve(hostname).then(
      (found) => {
        const wanted = options?.family === 4 || options?.family === 6 ? found.filter((a) => a.family === options.family) : found;
        if (wanted.length === 0) return callback(new DnsLookupError('ENODATA'), []);
        if (options?.all)
          return callback(
            null,
            wanted.map(({ address, family }) => ({ address, family })),
          );
        return callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };

  private async checked(name: string, addresses: ResolvedAddress[]): Promise<ResolvedAddress[]> {
    const refused = this.allowPrivateTargets ? undefined : addresses.find((a) => !isPublicAddress(a.address));
    if (refused) {
      const reason = nonPublicAddressReason(refused.address)!;
      throw new NonPublicAddressError(name === refused.address ? reason : `${name} resolves to ${reason.replace(' is a', ', a').replace(' is an', ', an')}`);
    }
    return addresses;
  }

  /**
   * Waits for a slot (at most the deadline), queries, and remembers a failure of the query (not a wait
   * for a slot: the slots were busy with other names).
   */
  private async lookUp(name: string, tenant: string): Promise<ResolvedAddress[]> {
    let release: () => void;
    try {
      release = await this.slots.acquire(tenant, !this.suspects.has(name), this.timeoutMs);
    } catch (err) {
      if (err instanceof SlotWaitTimeout) throw new DnsTimeoutError(`no DNS lookup slot for ${name} within ${this.timeoutMs} ms`);
      throw err;
    }
    try {
      return await this.query(name);
    } catch (err) {
      this.failures.set(name, err as Error);
      this.suspects.set(name, true);
      throw err;
    } finally {
      release();
    }
  }

  /**
   * A and AAAA together on a resolver of its own, so that the deadline cancels exactly this lookup.
   * Once one family has answered, the other gets RESOLUTION_DELAY_MS more.
   */
  private query(name: string): Promise<ResolvedAddress[]> {
    // c-ares retries once within the deadline; the deadline below is what bounds the lookup.
    const resolver = new Resolver({ timeout: Math.max(50, Math.floor(this.timeoutMs / 2)), tries: 2 });
    if (this.servers.length > 0) resolver.setServers([...this.servers]);
    return new Promise((resolve, reject) => {
      const found: ResolvedAddress[] = [];
      const errors: string[] = [];
      let answered = 0;
      let settled = false;
      let grace: NodeJS.Timeout | undefined;
      const finish = (timedOut: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        clearTimeout(grace);
        resolver.cancel();
        if (found.length > 0) return resolve(found);
        if (timedOut || errors.includes('ETIMEOUT')) return reject(new DnsTimeoutError(`no DNS answer for ${name} within ${this.timeoutMs} ms`));
        // No such name, or no address of either family (ENODATA), is reported as ENOTFOUND; other errors as they are.
        const other = errors.find((code) => code !== 'ENOTFOUND' && code !== 'ENODATA');
        reject(new DnsLookupError(other ?? 'ENOTFOUND'));
      };
      const deadline = setTimeout(() => finish(true), this.timeoutMs);
      const answer = (family: 4 | 6) => (err: NodeJS.ErrnoException | null, records: RecordWithTtl[]) => {
        if (settled) return;
        answered++;
        if (err) errors.push(err.code ?? 'EUNKNOWN');
        else {
          for (const r of records) {
            found.push({ address: r.address, family, ttl: Math.min(MAX_ANSWER_TTL_MS, Math.max(MIN_ANSWER_TTL_MS, r.ttl * 1000)) });
          }
        }
        if (answered === 2) finish(false);
        else if (found.length > 0 && !grace) grace = setTimeout(() => finish(false), RESOLUTION_DELAY_MS);
      };
      resolver.resolve4(name, { ttl: true }, answer(4));
      resolver.resolve6(name, { ttl: true }, answer(6));
    });
  }
}

const lookupTenant = new AsyncLocalStorage<string>();

const perContext = new WeakMap<AppContext, TargetResolver>();

/** The process's resolver for one context (its settings and metrics), shared by the dispatcher and test pings. */
export function webhookTargetResolver(ctx: AppContext): TargetResolver {
  let resolver = perContext.get(ctx);
  if (!resolver) {
    const gauge = ctx.metrics.webhookDnsLookupsInFlight;
    resolver = new TargetResolver({
      allowPrivateTargets: ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      servers: ctx.config.WEBHOOK_DNS_SERVERS,
      // Within the attempt's own deadline, so that a lookup timing out is reported as such.
      timeoutMs: Math.min(ctx.config.WEBHOOK_DNS_TIMEOUT_MS, ctx.config.WEBHOOK_TIMEOUT_SECONDS * 1000),
      maxInFlight: ctx.config.WEBHOOK_DNS_MAX_IN_FLIGHT,
      onInFlight: (count) => gauge.set(count),
    });
    perContext.set(ctx, resolver);
  }
  return resolver;
}
