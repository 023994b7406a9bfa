import type { PrefixPage } from '../domain/access/credential-prefixes.js';

const PAGE_SIZE = 5_000;

/** Whether `value` is in the ascending array. */
function contains(sorted: Uint32Array, value: number): boolean {
  let low = 0;
  let high = sorted.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const at = sorted[middle]!;
    if (at === value) return true;
    if (at < value) low = middle + 1;
    else high = middle - 1;
  }
  return false;
}

/**
 * The public id parts of every stored credential, as a sorted array of 32-bit numbers (4 bytes each), read page by page on
 * demand and again at most once per `maxAgeMs`. It tells a credential that exists (a device or key this process has not seen
 * yet) from a made-up one without a lookup per request, so a flood of made-up tokens from an address costs one reread per
 * period, not one query each, while that address's real credentials are still looked up.
 */
export class PrefixIndex {
  private sorted: Uint32Array | null = null;
  private loadedAt = 0;
  private loading: Promise<void> | null = null;

  constructor(
    private readonly pages: PrefixPage[],
    private readonly maxAgeMs = 5_000,
  ) {}

  /** Whether a credential with this 8-hex-digit id part exists (as of the last read); false when it cannot be read. */
  async has(prefix: string): Promise<boolean> {
    if (!/^[0-9a-f]{8}$/.test(prefix)) return false;
    const value = Number.parseInt(prefix, 16);
    if (this.sorted !== null && contains(this.sorted, value)) return true;
    if (this.loading === null && Date.now() - this.loadedAt > this.maxAgeMs) {
      this.loading = this.load().finally(() => {
        this.loading = null;
      });
    }
    // A read under way answers every request that waits on it, those that came after it started included.
    if (this.loading !== null) await this.loading.catch(() => undefined);
    return this.sorted !== null && contains(this.sorted, value);
  }

  /** Reads every page; a failed read is tried again only after `maxAgeMs` too, so an outage does not turn into a retry per request. */
  private async load(): Promise<void> {
    this.loadedAt = Date.now();
    const values: number[] = [];
    for (const page of this.pages) {
      let after = '';
      for (;;) {
        const prefixes = await page(after, PAGE_SIZE);
        for (const prefix of prefixes) if (/^[0-9a-f]{8}$/.test(prefix)) values.push(Number.parseInt(prefix, 16));
        if (prefixes.length < PAGE_SIZE) break;
        after = prefixes.at(-1)!;
      }
    }
    this.sorted = Uint32Array.from(values).sort();
  }
}
