import type { AppContext } from '../context.js';
import type { Following, LogSink, StoredEvent } from '../log/follow.js';
import { committedOffset } from '../log/reads.js';

const EMERGENCY_ID = /"emergencyId":"([0-9a-f-]{36})"/;

/** One org followed for a session: the emergencies subscribed to in it, and by which URIs. */
interface OrgWatch {
  following: Following;
  /** emergencyId → subscribed URIs of it (the record, the timeline, or both). */
  uris: Map<string, Set<string>>;
}

/**
 * A session's resource subscriptions (extensions §10): one follower of the event log per org with subscriptions, from the
 * org's head when the first one was made. Each committed event of a subscribed emergency announces its URIs, in commit
 * order, whichever instance committed it: the log's one follower drives it, not a timer per session.
 */
export class ResourceSubscriptions {
  private readonly orgs = new Map<string, OrgWatch>();
  private count = 0;

  constructor(
    private readonly ctx: AppContext,
    private readonly updated: (uri: string) => void,
    private readonly onError: (err: unknown) => void,
    readonly max: number,
  ) {}

  get size(): number {
    return this.count;
  }

  /** Subscribes `uri` (an emergency or its timeline); false when the session holds `max` subscriptions already. */
  async subscribe(orgId: string, emergencyId: string, uri: string): Promise<boolean> {
    let watch = this.orgs.get(orgId);
    if (watch?.uris.get(emergencyId)?.has(uri)) return true;
    if (this.count >= this.max) return false;
    if (!watch) {
      const head = await committedOffset(this.ctx.db.db, orgId);
      // Another subscription of the org may have started its follower meanwhile.
      watch = this.orgs.get(orgId);
      if (!watch) {
        const uris = new Map<string, Set<string>>();
        const sink: LogSink = { take: (event) => this.announce(uris, event), backedUp: false, drained: () => Promise.resolve() };
        watch = { following: this.ctx.eventLog.follow(orgId, head, sink, { atEnd: true, onError: this.onError }), uris };
        this.orgs.set(orgId, watch);
      }
    }
    let uris = watch.uris.get(emergencyId);
    if (!uris) {
      uris = new Set();
      watch.uris.set(emergencyId, uris);
    }
    if (!uris.has(uri)) {
      uris.add(uri);
      this.count++;
    }
    return true;
  }

  unsubscribe(orgId: string, emergencyId: string, uri: string): void {
    const watch = this.orgs.get(orgId);
    const uris = watch?.uris.get(emergencyId);
    if (!watch || !uris?.delete(uri)) return;
    this.count--;
    if (uris.size === 0) watch.uris.delete(emergencyId);
    if (watch.uris.size === 0) {
      watch.following.close();
      this.orgs.delete(orgId);
    }
  }

  close(): void {
    for (const watch of this.orgs.values()) watch.following.close();
    this.orgs.clear();
    this.count = 0;
  }

  private announce(uris: Map<string, Set<string>>, event: StoredEvent): boolean {
    const emergencyId = EMERGENCY_ID.exec(event.payload)?.[1];
    const subscribed = emergencyId ? uris.get(emergencyId) : undefined;
    if (subscribed) for (const uri of subscribed) this.updated(uri);
    return true;
  }
}
