/** Why a caller got no slot: none came free for it within its wait. */
export class SlotWaitTimeout extends Error {}

interface Waiter {
  start: () => void;
  timer: NodeJS.Timeout;
}

/** One tenant's waiting callers: the preferred ones first. */
interface TenantQueue {
  first: Waiter[];
  later: Waiter[];
}

/**
 * A counting semaphore shared fairly between tenants: `total` slots, of which one tenant may hold at
 * most `perTenant`, so a tenant with many slow callers cannot take them all. A freed slot goes to the
 * waiting tenants in turn (round robin), and within a tenant to its preferred callers before the others.
 * A caller waits at most `maxWaitMs` and then gets a SlotWaitTimeout.
 */
export class FairSlots {
  private held = 0;
  private readonly heldBy = new Map<string, number>();
  /** Tenants with waiting callers, in turn order (a Map keeps insertion order). */
  private readonly waiting = new Map<string, TenantQueue>();

  constructor(
    private readonly total: number,
    private readonly perTenant: number,
    private readonly onChange: (held: number) => void = () => undefined,
  ) {}

  get inUse(): number {
    return this.held;
  }

  /** Resolves with the function that gives the slot back (call it exactly once). */
  acquire(tenant: string, preferred: boolean, maxWaitMs: number): Promise<() => void> {
    if (this.free(tenant)) return Promise.resolve(this.take(tenant));
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(tenant) ?? { first: [], later: [] };
      this.waiting.set(tenant, queue);
      const list = preferred ? queue.first : queue.later;
      const waiter: Waiter = {
        start: () => resolve(this.take(tenant)),
        timer: setTimeout(() => {
          list.splice(list.indexOf(waiter), 1);
          if (queue.first.length === 0 && queue.later.length === 0) this.waiting.delete(tenant);
          reject(new SlotWaitTimeout(`no slot within ${maxWaitMs} ms`));
        }, maxWaitMs),
      };
      list.push(waiter);
    });
  }

  private free(tenant: string): boolean {
    return this.held < this.total && (this.heldBy.get(tenant) ?? 0) < this.perTenant;
  }

  private take(tenant: string): () => void {
    this.held++;
    this.heldBy.set(tenant, (this.heldBy.get(tenant) ?? 0) + 1);
    this.onChange(this.held);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.held--;
      const left = (this.heldBy.get(tenant) ?? 1) - 1;
      if (left === 0) this.heldBy.delete(tenant);
      else this.heldBy.set(tenant, left);
      this.onChange(this.held);
      this.serveWaiting();
    };
  }

  /** Starts waiting callers while slots are free, one per tenant in turn. */
  private serveWaiting(): void {
    for (const [tenant, queue] of this.waiting) {
      if (this.held >= this.total) return;
      if (!this.free(tenant)) continue;
      const waiter = queue.first.shift() ?? queue.later.shift()!;
      clearTimeout(waiter.timer);
      // Back of the line for its next caller.
      this.waiting.delete(tenant);
      if (queue.first.length > 0 || queue.later.length > 0) this.waiting.set(tenant, queue);
      waiter.start();
    }
  }
}
