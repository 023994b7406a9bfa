import type { DbHandle } from '../db/connect.js';
import type { CommittedEvent } from '../db/unit-of-work.js';
import { eventsCommitted } from '../observability/trace-channels.js';
import { committedOffsets, eventsAfter, type StoredEvent } from './reads.js';
import { ReplayPages } from './replay-pages.js';
import { ReplayTurns } from './replay-turns.js';

export type { CommittedEvent, StoredEvent };

/** What follows an org's log (a device socket, a browser's event stream, a tool's subscription). */
export interface LogSink {
  /**
   * Takes the next event: each once, in offset order, from the follower's position on. `live` tells an event of the org's
   * shared live read (handed to every live follower in one synchronous loop) from one of this follower's own replay.
   * Returns false when it can take no more: it then stops following.
   */
  take(event: StoredEvent, live: boolean): boolean;
  /** Too much is queued for its client: a replay waits for `drained()` before it goes on, and joins the live read only then. */
  readonly backedUp: boolean;
  drained(): Promise<void>;
}

export interface FollowOptions {
  /** The caller knows nothing was committed after `from` (it read the head just now): no replay read is needed to join. */
  atEnd?: boolean;
  /** Told when a live read fails; the follower stays and the next wake-up or poll reads again. One report per function and failure. */
  onError?(err: unknown, where: 'live read'): void;
}

/** One follower's place in its org's log. */
export interface Following {
  /** The offset of the last event handed to the sink. */
  readonly position: number;
  /** Resolves once the follower takes events from the shared live read, or has stopped; rejects when its replay failed. */
  readonly caughtUp: Promise<void>;
  /** Stops following (the sink gets nothing more). */
  close(): void;
}

export interface EventLogOptions {
  /** Rows read per query, by the live read and by replays. */
  pageSize: number;
  /** How often the committed heads of the followed orgs are compared with what was read: the backstop for a lost wake-up. */
  pollIntervalMs: number;
  /** Replays reading or writing a page at once in this process; the others wait for a later turn of the event loop. */
  replaysAtOnce: number;
  /** Payload bytes of recent replay pages kept for other followers' replays, over every org. */
  replayCacheBytes: number;
  /** How long one replay read serves the others: a reconnect storm's jittered arrivals fall within it. */
  replayCacheTtlMs: number;
  /**
   * Live hand-overs (one event to one follower) an org makes in one turn of the event loop; the rest of a large org's fan-out
   * waits for the next turn, so that another org's commit, request or frame is not queued behind it.
   */
  handOversPerTurn: number;
  /** Called once per replay page read from the database. */
  onReplayRead?(): void;
}

export const defaultEventLogOptions: EventLogOptions = {
  pageSize: 500,
  pollIntervalMs: 1_000,
  replaysAtOnce: 4,
  replayCacheBytes: 32 * 1024 * 1024,
  replayCacheTtlMs: 5_000,
  handOversPerTurn: 32,
};

class Follower implements Following {
  stopped = false;
  readonly caughtUp: Promise<void>;

  constructor(
    readonly sink: LogSink,
    public position: number,
    readonly onError: FollowOptions['onError'],
    private readonly leave: (f: Follower) => void,
    run: (f: Follower) => Promise<void>,
  ) {
    this.caughtUp = run(this);
    // The caller learns of a failed replay from `caughtUp`; one that does not ask must not bring the process down.
    this.caughtUp.catch(() => undefined);
  }

  /** Hands one event over unless it has had it; false once the follower stopped. */
  give(event: StoredEvent, live: boolean): boolean {
    if (this.stopped) return false;
    if (event.offset <= this.position) return true;
    this.position = event.offset;
    if (this.sink.take(event, live)) return true;
    this.close();
    return false;
  }

  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.leave(this);
  }
}

/**
 * The followers of one org in this process. One read fetches what was committed after `readOffset` and hands each row to every
 * live follower; a follower behind it replays on its own (through the shared replay pages, a page per turn) and joins the live
 * set in one synchronous step once its position has reached `readOffset`, so no row can fall between its replay and the live read.
 * Wake-ups are hints: one during a read coalesces into one more read, and a lost one is covered by the log's backstop poll.
 */
class OrgFollowers {
  readonly live = new Set<Follower>();
  /**
   * Live rows not yet handed to every follower that was live when they were read, oldest first: a follower gets them in
   * offset order, and one that joins later has had them by its replay.
   */
  private readonly handing: { row: StoredEvent; followers: Follower[]; next: number }[] = [];
  private handedOver: (() => void)[] = [];
  replaying = 0;
  /** Highest offset the live read has handed over; null until the first follower joins. */
  readOffset: number | null = null;
  private running = false;
  private again = false;

  constructor(
    readonly orgId: string,
    private readonly log: EventLog,
  ) {}

  get idle(): boolean {
    return this.live.size === 0 && this.replaying === 0 && !this.running && this.handing.length === 0;
  }

  get handingOver(): boolean {
    return this.handing.length > 0;
  }

  /** Makes up to `budget` hand-overs of the oldest rows; returns what is left of the budget. */
  handOver(budget: number): number {
    while (budget > 0 && this.handing.length > 0) {
      const head = this.handing[0]!;
      while (budget > 0 && head.next < head.followers.length) {
        const f = head.followers[head.next++]!;
        budget--;
        try {
          if (!f.give(head.row, true)) this.live.delete(f);
        } catch (err) {
          // A sink that throws stops following; the others, and the committer that woke us, carry on.
          this.live.delete(f);
          f.close();
          this.log.report([f], err, 'live read');
        }
      }
      if (head.next < head.followers.length) break;
      this.handing.shift();
      this.log.handedOver(this.orgId, head.row);
    }
    if (this.handing.length === 0) for (const resolve of this.handedOver.splice(0)) resolve();
    return budget;
  }

  /**
   * A commit happened (or may have): read what is new. A commit of this process that hands over its rows and continues right
   * where the live read stands is delivered at once: the alert leaves before the declare's answer and without a read of what
   * was just written.
   */
  wake(committed?: CommittedEvent): void {
    if (this.live.size === 0) return;
    if (this.running) {
      this.again = true;
      return;
    }
    const written = committed?.written;
    let offset = this.readOffset;
    if (written && written.length > 0 && offset !== null && committed!.offset - written.length === offset) {
      for (const event of written) {
        this.deliver({ offset: ++offset, payload: event.payload, createdAtMs: Date.parse(event.created_at) });
        this.readOffset = offset;
      }
      return;
    }
    void this.pump();
  }

  private deliver(row: StoredEvent): void {
    this.handing.push({ row, followers: [...this.live], next: 0 });
    this.log.handOverSoon(this);
  }

  /** Resolves once every row read so far has been handed over: the live read's pace. */
  private allHandedOver(): Promise<void> {
    return this.handing.length === 0 ? Promise.resolve() : new Promise((resolve) => this.handedOver.push(resolve));
  }

  private async pump(): Promise<void> {
    this.running = true;
    try {
      do {
        this.again = false;
        while (this.live.size > 0 && this.readOffset !== null) {
          const rows = await eventsAfter(this.log.db, this.orgId, this.readOffset, this.log.options.pageSize);
          for (const row of rows) {
            this.deliver(row);
            this.readOffset = row.offset;
          }
          await this.allHandedOver();
          if (rows.length < this.log.options.pageSize) break;
        }
      } while (this.again && this.live.size > 0);
    } catch (err) {
      // The backstop poll wakes this org again; the rows stay in the table meanwhile.
      this.log.report(this.live, err, 'live read');
    } finally {
      this.running = false;
    }
  }

  /** Replays what `f` has not had, then makes it live. Resolves when it is live or stopped. */
  async admit(f: Follower, startsAtEnd: boolean): Promise<void> {
    this.replaying++;
    // Whether the last read found nothing beyond the follower's position: only then may it start the live read from there.
    let atEnd = startsAtEnd;
    try {
      while (!f.stopped) {
        // Paced by the client, and joined only with a drained queue so that the live read does not find it over its bound.
        if (f.sink.backedUp) {
          await f.sink.drained();
          continue;
        }
        if (this.tryJoin(f, atEnd)) return;
        await this.log.turns.acquire();
        let rows: StoredEvent[];
        try {
          if (f.stopped) return;
          const page = await this.log.pages.read(this.orgId, f.position, this.readOffset);
          rows = page.rows;
          atEnd = page.atEnd;
          for (const row of rows) {
            if (!f.give(row, false)) return;
            // The rest of the page is served again from the shared pages once the client has read.
            if (f.sink.backedUp) {
              atEnd = false;
              break;
            }
          }
        } finally {
          this.log.turns.release();
        }
        // Nothing newer yet the live read is ahead: this read's snapshot predates the live read's. Read again shortly;
        // never skip ahead, that would be a gap.
        if (rows.length === 0 && !(this.live.size === 0 && !this.running)) await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      this.replaying--;
    }
  }

  /** Synchronous on purpose: see the class comment. */
  private tryJoin(f: Follower, atEnd: boolean): boolean {
    if (this.live.size === 0 && !this.running) {
      // Nobody depends on readOffset: it may start from this follower's position once its replay has reached the end
      // (else the live read would hand over the backlog in one burst).
      if (!atEnd) return false;
      this.readOffset = f.position;
    } else if (this.readOffset === null || f.position < this.readOffset) {
      return false;
    }
    this.live.add(f);
    // Rows committed between the replay's last read and now were announced while this follower was not live: read once
    // more so they are not left waiting for the next commit.
    this.wake();
    return true;
  }
}

/**
 * The one way to follow an org's event log: `follow(orgId, from, sink)` hands the sink every event committed after `from`,
 * once and in order, first by replay and then live, in this process or from the commits of others (woken by `committed`, fed
 * from this process's commits and from PostgreSQL NOTIFY). The device gateway, the browsers' event streams and anything else
 * that pushes events follow through here; the webhook fan-out keeps a durable cursor instead (see cursors.ts) and wakes on
 * `onCommitted`.
 */
export class EventLog {
  readonly options: EventLogOptions;
  readonly pages: ReplayPages;
  readonly turns: ReplayTurns;
  private readonly orgs = new Map<string, OrgFollowers>();
  private readonly listeners = new Set<(event: CommittedEvent) => void>();
  private readonly handOverListeners = new Set<(orgId: string, row: StoredEvent) => void>();
  /** Orgs with live rows still to hand over, served in turns. */
  private readonly handing = new Set<OrgFollowers>();
  private handOverTurn: NodeJS.Immediate | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(
    readonly db: DbHandle,
    options: Partial<EventLogOptions> = {},
  ) {
    this.options = { ...defaultEventLogOptions, ...options };
    this.turns = new ReplayTurns(this.options.replaysAtOnce);
    this.pages = new ReplayPages(db, {
      pageSize: this.options.pageSize,
      maxBytes: this.options.replayCacheBytes,
      ttlMs: this.options.replayCacheTtlMs,
      onRead: () => this.options.onReplayRead?.(),
    });
  }

  /** Orgs with followers in this process. */
  get followedOrgs(): number {
    return this.orgs.size;
  }

  /** Hands `sink` every event of `orgId` after offset `from`, once and in order, until it is closed or refuses one. */
  follow(orgId: string, from: number, sink: LogSink, options: FollowOptions = {}): Following {
    let org = this.orgs.get(orgId);
    if (!org) {
      org = new OrgFollowers(orgId, this);
      this.orgs.set(orgId, org);
      this.timer ??= setInterval(() => this.poll(), this.options.pollIntervalMs).unref();
    }
    const followers = org;
    return new Follower(
      sink,
      from,
      options.onError,
      (f) => followers.live.delete(f),
      (f) =>
        followers.admit(f, options.atEnd ?? false).catch((err: unknown) => {
          f.close();
          throw err;
        }),
    );
  }

  /** A transaction that wrote events has committed (here, or in another process and forwarded): wake its org's followers. */
  committed(event: CommittedEvent): void {
    if (eventsCommitted.hasSubscribers) eventsCommitted.publish(event);
    this.orgs.get(event.orgId)?.wake(event);
    for (const listener of this.listeners) listener(event);
  }

  /** Called on every commit that wrote events: for a follower with a durable cursor, which reads on its own. */
  onCommitted(listener: (event: CommittedEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Called once a live row has been handed to every follower of its org that was live when it was read (a fan-out's end, for
   * its measurement).
   */
  onHandedOver(listener: (orgId: string, row: StoredEvent) => void): () => void {
    this.handOverListeners.add(listener);
    return () => this.handOverListeners.delete(listener);
  }

  handedOver(orgId: string, row: StoredEvent): void {
    for (const listener of this.handOverListeners) listener(orgId, row);
  }

  /**
   * A row of `org` waits to be handed over. Its first hand-overs happen now (a small org's alert leaves at once, before the
   * declare's answer); what is over the turn's budget goes on in later turns, one budget per org per turn, round robin.
   */
  handOverSoon(org: OrgFollowers): void {
    if (this.handing.has(org)) return;
    org.handOver(this.options.handOversPerTurn);
    if (!org.handingOver) return;
    this.handing.add(org);
    this.handOverTurn ??= setImmediate(() => this.handOverNextTurn());
  }

  private handOverNextTurn(): void {
    this.handOverTurn = undefined;
    for (const org of [...this.handing]) {
      org.handOver(this.options.handOversPerTurn);
      if (!org.handingOver) this.handing.delete(org);
    }
    if (this.handing.size > 0) this.handOverTurn = setImmediate(() => this.handOverNextTurn());
  }

  /** Tells each distinct error handler of `followers` about a failed read, once. */
  report(followers: Iterable<Follower>, err: unknown, where: 'live read'): void {
    const handlers = new Set<NonNullable<FollowOptions['onError']>>();
    for (const f of followers) if (f.onError) handlers.add(f.onError);
    for (const handler of handlers) handler(err, where);
  }

  /** Compares the committed heads of the orgs followed live with what was read, and drops the orgs nobody follows. */
  private poll(): void {
    if (this.polling) return;
    for (const [orgId, org] of this.orgs) if (org.idle) this.orgs.delete(orgId);
    if (this.orgs.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const active = [...this.orgs.values()].filter((org) => org.live.size > 0);
    if (active.length === 0) return;
    this.polling = true;
    committedOffsets(
      this.db.db,
      active.map((org) => org.orgId),
    )
      .then((heads) => {
        for (const org of active) {
          const head = heads.get(org.orgId);
          if (head !== undefined && org.readOffset !== null && head > org.readOffset) org.wake();
        }
      })
      .catch((err: unknown) =>
        this.report(
          active.flatMap((org) => [...org.live]),
          err,
          'live read',
        ),
      )
      .finally(() => {
        this.polling = false;
      });
  }

  /** Stops the backstop poll; followers still open get nothing more from it. */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.listeners.clear();
    this.handOverListeners.clear();
    if (this.handOverTurn) clearImmediate(this.handOverTurn);
    this.handOverTurn = undefined;
    this.handing.clear();
  }
}
