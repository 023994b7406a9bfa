import { readFileSync } from 'node:fs';

/** The process's soft open-file limit (`ulimit -n`) from /proc/self/limits; null where unreadable (not Linux) or unlimited. */
export function openFileLimit(): number | null {
  try {
    const line = /^Max open files\s+(\d+|unlimited)\s/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    const soft = line ? Number(line[1]) : Number.NaN;
    return Number.isSafeInteger(soft) && soft > 0 ? soft : null;
  } catch {
    return null;
  }
}

/** Descriptors kept from the long-lived connections for REST and /healthz, the database, logs and worker threads. */
export function reservedDescriptors(limit: number): number {
  return Math.min(512, Math.floor(limit / 4));
}

/**
 * What long-lived connections (event streams, device sockets) may hold together, each keeping a descriptor open, so that running out
 * refuses a stream or a device (503) rather than every connection, /healthz and REST included.
 */
export class ConnectionBudget {
  private readonly counts = new Set<() => number>();

  constructor(
    /** Long-lived connections allowed at once; Infinity when the limit is unknown. */
    readonly capacity: number,
  ) {}

  /** The budget of this process: the open-file limit less the reserve (no bound when the limit is unknown). */
  static ofProcess(): ConnectionBudget {
    const limit = openFileLimit();
    return new ConnectionBudget(limit === null ? Number.POSITIVE_INFINITY : limit - reservedDescriptors(limit));
  }

  /** Counts `open` (connections held and being admitted) against the budget; returns the way to stop counting it. */
  track(open: () => number): () => void {
    this.counts.add(open);
    return () => this.counts.delete(open);
  }

  get inUse(): number {
    let total = 0;
    for (const count of this.counts) total += count();
    return total;
  }

  /** Whether one more long-lived connection would go beyond the budget. */
  get full(): boolean {
    return this.inUse >= this.capacity;
  }
}
