import { LRUCache } from 'lru-cache';

/** What a built feed was built from: it is served again while the org's stream head and name are unchanged and the window holds. */
export interface FeedStamp {
  offset: number;
  name: string;
}

interface CachedFeed {
  stamp: FeedStamp;
  /** Epoch ms when the first resolved emergency of the feed leaves it (the 24 h window moved past it). */
  validUntil: number;
  xml: Uint8Array;
}

/** The cache holds this many bytes of feeds at most, every org together; the least recently served go first. */
const MAX_CACHED_BYTES = 64 * 1024 * 1024;

const sameStamp = (a: FeedStamp, b: FeedStamp) => a.offset === b.offset && a.name === b.name;

/**
 * Each org's latest feed, so that pollers of an unchanged feed cost one small read; concurrent requests of a changed feed
 * share one build.
 */
export class FeedCache {
  private readonly feeds = new LRUCache<string, CachedFeed>({ maxSize: MAX_CACHED_BYTES, sizeCalculation: (f) => f.xml.byteLength + 1 });
  private readonly building = new Map<string, { stamp: FeedStamp; done: Promise<CachedFeed> }>();

  async get(orgId: string, stamp: FeedStamp, now: number, build: () => Promise<{ xml: Uint8Array; validUntil: number }>): Promise<Uint8Array> {
    const cached = this.feeds.get(orgId);
    if (cached && sameStamp(cached.stamp, stamp) && now < cached.validUntil) return cached.xml;
    const running = this.building.get(orgId);
    if (running && sameStamp(running.stamp, stamp)) {
      // A build refused for its own caller (its key's share of the worker threads) is not this caller's answer.
      const shared = await running.done.catch(() => null);
      if (shared) return shared.xml;
    }
    const done = build().then(({ xml, validUntil }) => ({ stamp, validUntil, xml }));
    this.building.set(orgId, { stamp, done });
    try {
      const built = await done;
      // A slower build of an older state never replaces a newer one.
      const current = this.feeds.get(orgId);
      if (!current || current.stamp.offset <= built.stamp.offset) this.feeds.set(orgId, built);
      return built.xml;
    } finally {
      if (this.building.get(orgId)?.done === done) this.building.delete(orgId);
    }
  }
}

const caches = new WeakMap<object, FeedCache>();

/** The feed cache of one running service (one per context, so that servers sharing a process share nothing). */
export function feedCacheOf(owner: object): FeedCache {
  let cache = caches.get(owner);
  if (!cache) {
    cache = new FeedCache();
    caches.set(owner, cache);
  }
  return cache;
}
