import { EventEmitter } from 'node:events';

import type { CommittedEvent } from '../db/unit-of-work.js';
import { eventsCommitted } from '../observability/trace-channels.js';

export type { CommittedEvent };

/**
 * Wakes readers of the event table (device gateway, webhook dispatcher) when a transaction that
 * wrote events has committed. It carries the org and offset, and for this process's own commits the
 * rows: a reader takes them only when they continue exactly where it stands, and reads the committed
 * rows itself otherwise, so a lost or duplicated wake-up never loses or duplicates an event.
 */
export class EventBus {
  private readonly emitter = new EventEmitter();
  constructor() {
    this.emitter.setMaxListeners(0);
  }
  committed(event: CommittedEvent): void {
    if (eventsCommitted.hasSubscribers) eventsCommitted.publish(event);
    this.emitter.emit('committed', event);
  }
  onCommitted(listener: (event: CommittedEvent) => void): () => void {
    this.emitter.on('committed', listener);
    return () => this.emitter.off('committed', listener);
  }
}
