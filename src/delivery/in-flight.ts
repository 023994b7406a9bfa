import type { WebhookSubscriptionTable } from '../db/types.js';
import type { ClaimedDelivery } from '../domain/webhooks/queue.js';

export interface InFlightOptions {
  perSubscription: number;
  maxInFlight: number;
  stopping: AbortSignal;
  /** The subscription's row as last read, to start its waiting deliveries with (undefined once disabled). */
  current(subscriptionId: string): WebhookSubscriptionTable | undefined;
  /** Sends one delivery and records its outcome. */
  send(subscription: WebhookSubscriptionTable, delivery: ClaimedDelivery): Promise<void>;
  /** Told after each finished request, once the slot it freed has been handed on. */
  freed(subscriptionId: string): void;
}

/**
 * Decides which claimed delivery is sent next. A subscription has at most `perSubscription` requests in
 * flight, so a slow subscriber ties up only its own slots; the process has `maxInFlight`, handed to the
 * subscriptions waiting for one in turn. A subscription with none in flight may start one beyond that,
 * so others' slow requests never hold up its next delivery.
 */
export class InFlightScheduler {
  private readonly inFlightBySub = new Map<string, number>();
  /** Claimed (leased to this worker) but not started yet, per subscription. */
  private readonly buffers = new Map<string, ClaimedDelivery[]>();
  /** Subscriptions with buffered deliveries waiting for a process-wide slot, in turn order (a Set keeps insertion order). */
  private readonly blocked = new Set<string>();
  /** In flight plus buffered. */
  private totalHeld = 0;
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: InFlightOptions) {}

  /** Deliveries of a subscription in flight or buffered. */
  heldBy(subscriptionId: string): number {
    return (this.inFlightBySub.get(subscriptionId) ?? 0) + (this.buffers.get(subscriptionId)?.length ?? 0);
  }

  /** Deliveries in flight or buffered, every subscription together. */
  get held(): number {
    return this.totalHeld;
  }

  stats(): { inFlight: number; buffered: number; held: number } {
    let buffered = 0;
    for (const b of this.buffers.values()) buffered += b.length;
    return { inFlight: this.inFlight, buffered, held: this.totalHeld };
  }

  /** Buffers deliveries claimed for a subscription and starts those it has slots for. */
  hand(subscription: WebhookSubscriptionTable, deliveries: ClaimedDelivery[]): void {
    const buffer = this.buffers.get(subscription.id) ?? [];
    buffer.push(...deliveries);
    this.buffers.set(subscription.id, buffer);
    this.totalHeld += deliveries.length;
    this.startSends(subscription);
  }

  /** On stop: takes the buffered deliveries out, never to be started here. */
  takeBuffered(): ClaimedDelivery[] {
    const buffered = [...this.buffers.values()].flat();
    this.buffers.clear();
    return buffered;
  }

  /** Resolves once no request is in flight. */
  whenIdle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** Starts buffered deliveries of a subscription while it and the process have free slots (see the class). */
  private startSends(subscription: WebhookSubscriptionTable): void {
    const buffer = this.buffers.get(subscription.id);
    while (buffer && buffer.length > 0 && !this.options.stopping.aborted) {
      const own = this.inFlightBySub.get(subscription.id) ?? 0;
      if (own >= this.options.perSubscription) return;
      if (own > 0 && this.inFlight >= this.options.maxInFlight) {
        this.blocked.add(subscription.id);
        return;
      }
      void this.run(subscription, buffer.shift()!);
    }
    if (buffer && buffer.length === 0) this.buffers.delete(subscription.id);
  }

  /** Hands free process-wide slots to the subscriptions waiting for one, one request each in turn. */
  private serveBlocked(): void {
    for (const id of this.blocked) {
      if (this.inFlight >= this.options.maxInFlight || this.options.stopping.aborted) return;
      this.blocked.delete(id);
      const subscription = this.options.current(id);
      const buffer = this.buffers.get(id);
      // One at its own cap is started again by its own finishing requests.
      if (!subscription || !buffer || buffer.length === 0 || (this.inFlightBySub.get(id) ?? 0) >= this.options.perSubscription) continue;
      void this.run(subscription, buffer.shift()!);
      if (buffer.length === 0) this.buffers.delete(id);
      else this.blocked.add(id); // to the back of the line
    }
  }

  private async run(subscription: WebhookSubscriptionTable, delivery: ClaimedDelivery): Promise<void> {
    this.inFlight++;
    this.inFlightBySub.set(subscription.id, (this.inFlightBySub.get(subscription.id) ?? 0) + 1);
    await this.options.send(subscription, delivery);
    this.inFlight--;
    this.totalHeld--;
    const left = (this.inFlightBySub.get(subscription.id) ?? 1) - 1;
    if (left === 0) this.inFlightBySub.delete(subscription.id);
    else this.inFlightBySub.set(subscription.id, left);
    if (this.inFlight === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
    // The freed slot goes to the subscriptions already waiting before this one takes it again.
    this.serveBlocked();
    this.startSends(subscription);
    this.options.freed(subscription.id);
  }
}
