import type { ServerResponse } from 'node:http';
import type { Principal } from '../domain/access/principal.js';
import type { EventLog, Following, LogSink, StoredEvent } from '../log/follow.js';
import type { ConnectionBudget } from '../edge/connection-budget.js';
import type { TenantQuota } from '../domain/tenancy/connection-quotas.js';
import type { TenantConnections } from '../edge/tenant-connections.js';
import { AppError } from '../errors.js';

/**
 * The org's event stream as Server-Sent Events for browsers: the device gateway's rows and offsets,
 * read once per org. The key travels in the Authorization header (fetch-streamed SSE), never in a URL,
 * and a stream keeps a request's rules for its whole life (extensions §9): it ends with its key, is
 * capped per key and per process, and drops a client that does not read.
 */

const KEEP_ALIVE_MS = 15_000;
/** How often streams whose client stopped reading are looked for. */
const STALL_CHECK_MS = 1_000;
/** Credentials re-read at once by one re-check round. */
const RECHECK_READS_AT_ONCE = 16;
/** Retry-After of a refused stream: a key at its limit must first close one; a full instance may have room soon. */
export const TOO_MANY_STREAMS_RETRY_AFTER_SECONDS = 10;
export const STREAMS_FULL_RETRY_AFTER_SECONDS = 5;

/** The limits of the streams (STREAMS_PER_KEY, MAX_STREAMS) and their internal timings (tests shorten these). */
export interface StreamLimits {
  /** Streams one key may hold open at once (STREAMS_PER_KEY). */
  perKey: number;
  /** Streams this instance holds open at once (MAX_STREAMS). */
  max: number;
  /** A stream with more than this queued for its client is dropped. */
  maxBufferedBytes: number;
  /** A stream whose queued data has not moved for this long is dropped. */
  stallTimeoutMs: number;
  /** During a replay, wait for the client to read once this much is queued. */
  replayHighWaterBytes: number;
  /** How often each streaming credential is read again from the database. */
  recheckMs: number;
}

export const defaultStreamLimits: Omit<StreamLimits, 'perKey' | 'max'> = {
  maxBufferedBytes: 1024 * 1024,
  stallTimeoutMs: 30_000,
  replayHighWaterBytes: 256 * 1024,
  recheckMs: 1_000,
};

/** How a stream's credential is checked again while it streams. */
export interface StreamAccess {
  /** The key's principal as stored now (read past any cache), or null when it no longer authenticates. */
  reverify(token: string): Promise<Principal | null>;
  /** Resolves when `principal` may still read the org; rejects (403 AppError) when it may not. */
  authorize(principal: Principal, orgId: string): Promise<unknown>;
}

const EVENT_TYPE = /"eventType":"([a-z._]+)"/;

/** Each live event is framed once for every stream of its org (the log hands the same row to all of them). */
const framed = new WeakMap<StoredEvent, string>();

function frameOf(row: StoredEvent): string {
  let frame = framed.get(row);
  if (frame === undefined) {
    const type = EVENT_TYPE.exec(row.payload)?.[1] ?? 'event';
    frame = `id: ${row.offset}\nevent: ${type}\ndata: ${row.payload}\n\n`;
    framed.set(row, frame);
  }
  return frame;
}

/** The streams opened with one key (by its bearer token, which the re-checks verify again). */
export class StreamCredential {
  readonly watchers = new Set<Watcher>();
  /** Streams admitted and not yet watching (their start is being read). */
  pending = 0;

  constructor(readonly token: string) {}

  get held(): number {
    return this.watchers.size + this.pending;
  }
}

/** A stream admitted by `reserve`, to be handed to `watch` or given back with `release`. */
export interface StreamSlot {
  readonly credential: StreamCredential;
  state: 'reserved' | 'watching' | 'released';
  /** Gives back the slot's place in its org's and partner's quotas, once `charge` has taken one. */
  uncharge?: () => void;
}

export type StreamAdmission = { admitted: true; slot: StreamSlot } | { admitted: false; error: AppError; retryAfterSeconds: number };

class Watcher implements LogSink {
  /** No more events are written (ended or dropped); the response may still be flushing. */
  closed = false;
  /** Writes not yet handed to the kernel, and when that queue last moved. */
  private unflushed = 0;
  private movedAt = 0;

  constructor(
    readonly res: ServerResponse,
    /** Highest offset written to this connection. */
    public last: number,
    readonly orgId: string,
    readonly credential: StreamCredential,
    private readonly limits: StreamLimits,
  ) {}

  private readonly flushed = (): void => {
    this.unflushed--;
    this.movedAt = Date.now();
  };

  write(text: string): void {
    if (this.unflushed++ === 0) this.movedAt = Date.now();
    this.res.write(text, this.flushed);
  }

  /** The log's next event for this stream; false once the stream has closed. */
  take(row: StoredEvent): boolean {
    this.send(row.offset, frameOf(row));
    return !this.closed;
  }

  send(offset: number, frame: string): void {
    if (this.closed || offset <= this.last) return;
    this.write(frame);
    this.last = offset;
    if (this.res.writableLength > this.limits.maxBufferedBytes) this.drop();
  }

  /** Whether data has been queued for the client without moving for longer than the stall timeout. */
  stalled(now: number): boolean {
    return this.unflushed > 0 && now - this.movedAt > this.limits.stallTimeoutMs;
  }

  /** Queued beyond the replay's high-water mark: wait for the client to read. */
  get backedUp(): boolean {
    return this.res.writableLength > this.limits.replayHighWaterBytes;
  }

  /** Resolves once the queue has drained, or the response is gone. */
  drained(): Promise<void> {
    if (this.closed || this.res.destroyed || this.res.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  /** Ends the stream in order (its credential is gone, the server stops): the client sees the end and may resume. */
  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.res.end();
  }

  /** Too slow a reader: the connection goes at once (what is queued could not be delivered anyway); it resumes with its last id. */
  drop(): void {
    this.closed = true;
    this.res.destroy();
  }
}

export class BrowserStreams {
  private readonly watchers = new Set<Watcher>();
  /** By bearer token: one entry per key with streams open or being opened. */
  private readonly credentials = new Map<string, StreamCredential>();
  private pending = 0;
  private readonly following = new Map<Watcher, Following>();
  private readonly untrack: () => void;
  private readonly timers: NodeJS.Timeout[];
  private rechecking = false;
  private stopped = false;

  constructor(
    private readonly log: EventLog,
    private readonly access: StreamAccess,
    private readonly budget: ConnectionBudget,
    private readonly tenants: TenantConnections,
    private readonly limits: StreamLimits,
    private readonly onError: (err: unknown, where: string) => void,
  ) {
    this.untrack = budget.track(() => this.watchers.size + this.pending);
    const stallCheck = setInterval(() => {
      const now = Date.now();
      for (const w of this.watchers) if (w.stalled(now)) w.drop();
    }, STALL_CHECK_MS);
    const keepAlive = setInterval(() => {
      for (const w of this.watchers) if (!w.closed) w.write(': keep-alive\n\n');
    }, KEEP_ALIVE_MS);
    const recheck = setInterval(() => {
      void this.recheck();
    }, limits.recheckMs);
    this.timers = [stallCheck, keepAlive, recheck];
    for (const t of this.timers) t.unref();
  }

  /** Streams open now. */
  get watching(): number {
    return this.watchers.size;
  }

  /**
   * Admits one more stream of the key whose bearer token is `token`, or says why not: 429
   * too_many_streams when the key holds STREAMS_PER_KEY, 503 unavailable when the instance holds
   * MAX_STREAMS (or its long-lived connections reach the open-file budget). Synchronous, so requests
   * racing each other are counted one by one.
   */
  reserve(token: string): StreamAdmission {
    const known = this.credentials.get(token);
    if (this.stopped) {
      return {
        admitted: false,
        error: new AppError('unavailable', 'The server is shutting down; reconnect shortly.'),
        retryAfterSeconds: STREAMS_FULL_RETRY_AFTER_SECONDS,
      };
    }
    if ((known?.held ?? 0) >= this.limits.perKey) {
      return {
        admitted: false,
        error: new AppError(
          'too_many_streams',
          `This key already holds ${this.limits.perKey} event streams on this instance (STREAMS_PER_KEY); close one before opening another.`,
        ),
        retryAfterSeconds: TOO_MANY_STREAMS_RETRY_AFTER_SECONDS,
      };
    }
    if (this.watchers.size + this.pending >= this.limits.max || this.budget.full) {
      return {
        admitted: false,
        error: new AppError('unavailable', `This instance holds as many event streams as it can; retry after ${STREAMS_FULL_RETRY_AFTER_SECONDS} s.`),
        retryAfterSeconds: STREAMS_FULL_RETRY_AFTER_SECONDS,
      };
    }
    const credential = known ?? new StreamCredential(token);
    if (!known) this.credentials.set(token, credential);
    credential.pending++;
    this.pending++;
    return { admitted: true, slot: { credential, state: 'reserved' } };
  }

  /**
   * Counts a reserved slot against its org's and partner's stream quotas (STREAMS_PER_ORG, STREAMS_PER_PARTNER or their own) and
   * their share of the instance, once the org is known and the key allowed to read it; says why not (429 too_many_streams, 503).
   */
  charge(slot: StreamSlot, quota: TenantQuota): Extract<StreamAdmission, { admitted: false }> | null {
    if (slot.state !== 'reserved' || slot.uncharge) throw new Error('a stream slot is charged once, before it watches');
    const admission = this.tenants.admit('streams', quota, this.limits.max);
    if (!admission.admitted) return admission;
    slot.uncharge = admission.release;
    return null;
  }

  /** Gives back a slot that will not stream (its start was refused). */
  release(slot: StreamSlot): void {
    if (slot.state !== 'reserved') return;
    slot.state = 'released';
    slot.uncharge?.();
    slot.credential.pending--;
    this.pending--;
    this.forgetIfIdle(slot.credential);
  }

  private forgetIfIdle(credential: StreamCredential): void {
    if (credential.held === 0 && this.credentials.get(credential.token) === credential) this.credentials.delete(credential.token);
  }

  /** Streams the org's events after `after` to `res` (headers already sent) until either side closes. */
  watch(slot: StreamSlot, orgId: string, after: number, res: ServerResponse): void {
    if (slot.state !== 'reserved') throw new Error('a stream slot is used once');
    slot.state = 'watching';
    const credential = slot.credential;
    credential.pending--;
    this.pending--;
    const w = new Watcher(res, after, orgId, credential, this.limits);
    credential.watchers.add(w);
    this.watchers.add(w);
    let gone = false;
    const leave = () => {
      if (gone) return;
      gone = true;
      w.closed = true;
      slot.uncharge?.();
      this.following.get(w)?.close();
      this.following.delete(w);
      this.watchers.delete(w);
      credential.watchers.delete(w);
      this.forgetIfIdle(credential);
    };
    res.on('close', leave);
    // The client may have gone while the stream's start was read: its close has already been emitted.
    if (res.destroyed || !res.socket || res.socket.destroyed) {
      leave();
      return;
    }
    if (this.stopped) {
      w.end();
      return;
    }
    const following = this.log.follow(orgId, after, w, { onError: (err) => this.onError(err, 'read') });
    this.following.set(w, following);
    following.caughtUp.catch((err) => {
      this.onError(err, 'replay');
      w.end();
    });
  }

  /**
   * One round of re-checks: each credential with open streams is read again from the database (once,
   * however many streams it holds) and authorized again for each org it streams; the streams it no
   * longer allows are ended. A round still running when the next is due makes that one skip.
   */
  async recheck(): Promise<void> {
    if (this.rechecking || this.stopped) return;
    this.rechecking = true;
    try {
      const due = [...this.credentials.values()].filter((c) => c.watchers.size > 0);
      let next = 0;
      const worker = async () => {
        while (next < due.length) {
          await this.recheckOne(due[next++]!);
          // On SQLite the reads complete within the tick: a round over many keys must not hold the loop.
          await new Promise((r) => setImmediate(r));
        }
      };
      await Promise.all(Array.from({ length: Math.min(RECHECK_READS_AT_ONCE, due.length) }, worker));
    } finally {
      this.rechecking = false;
    }
  }

  private async recheckOne(credential: StreamCredential): Promise<void> {
    let principal: Principal | null;
    try {
      principal = await this.access.reverify(credential.token);
    } catch (err) {
      // The database is unreachable: the streams carry on (they get nothing new meanwhile either) and
      // the next round reads again.
      this.onError(err, 'credential check');
      return;
    }
    const orgs = new Set<string>();
    for (const w of credential.watchers) if (!w.closed) orgs.add(w.orgId);
    for (const orgId of orgs) {
      let allowed = principal !== null;
      if (principal) {
        try {
          await this.access.authorize(principal, orgId);
        } catch (err) {
          if (!(err instanceof AppError && err.status === 403)) {
            this.onError(err, 'credential check');
            continue;
          }
          allowed = false;
        }
      }
      if (!allowed) for (const w of [...credential.watchers]) if (w.orgId === orgId) w.end();
    }
  }

  /** Ends every stream (the server is stopping); browsers reconnect with their last id. */
  close(): void {
    this.stopped = true;
    this.untrack();
    for (const t of this.timers) clearInterval(t);
    // A client that is not reading would hold the shutdown until its queue drained: it goes at once.
    for (const w of this.watchers) {
      if (w.res.writableLength > 0) w.drop();
      else w.end();
    }
  }
}
