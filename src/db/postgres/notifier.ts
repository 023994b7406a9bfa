import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { FailureReport } from '../handle.js';
import type { CommittedEvent } from '../unit-of-work.js';
import { PG_EVENT_CHANNEL } from './events.js';

/**
 * One notification per org, for any number of orgs, in one statement (named, so each connection plans
 * it once). Each payload is `{"orgId":…,"offset":…,"from":…}`, what the listeners of every instance parse;
 * `from` names the sending instance, whose own listener ignores it (listener.ts).
 */
const NOTIFY_STATEMENT = {
  name: 'emergency_api_notify_committed',
  text: 'select pg_notify($1, payload) from unnest($2::text[]) as payload',
};

/**
 * Wakes the other instances (their LISTEN connections, see listener.ts) after commits, with NOTIFY
 * sent as a statement of its own once the writing transaction has committed.
 *
 * A NOTIFY inside the writing transaction would make its commit take PostgreSQL's instance-wide
 * notification lock, held until the commit record is flushed: every committing writer of the cluster
 * then waits for the previous one's flush. Sent after the commit, the notification commits alone,
 * writes no data and waits for no flush, so the lock is held for a moment only.
 *
 * Wake-ups are hints: readers read the committed rows themselves and poll as a backstop, so one sent a
 * little late, or lost, only delays a reader on another instance (by at most its poll interval). So
 * `notify` never makes a caller wait: the orgs are queued with the highest offset of each, and one
 * statement at a time carries everything queued since the previous one, so a burst of commits costs a
 * few statements, not one per commit. A failure is reported once per outage (until a statement
 * succeeds again) and otherwise ignored.
 */
export class PgCommitNotifier {
  /** While true, nothing is sent (as if every notification were lost); tests use it. */
  dropping = false;
  /** Marks this instance's notifications: its own readers were woken at the commit already. */
  readonly senderId = randomBytes(8).toString('hex');
  private queued = new Map<string, number>();
  private sending: Promise<void> | null = null;
  private failing = false;
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly report: FailureReport,
  ) {}

  /** Queues a wake-up for each org's highest committed offset; returns at once. */
  notify(events: readonly CommittedEvent[]): void {
    if (this.closed || this.dropping || events.length === 0) return;
    for (const { orgId, offset } of events) {
      const known = this.queued.get(orgId);
      if (known === undefined || offset > known) this.queued.set(orgId, offset);
    }
    this.sending ??= this.sendQueued();
  }

  /** Sends what is queued, then sends nothing more. */
  async close(): Promise<void> {
    this.closed = true;
    await this.sending;
  }

  private async sendQueued(): Promise<void> {
    // Commits completing in the same turn of the event loop share the first statement.
    await new Promise((resolve) => setImmediate(resolve));
    while (this.queued.size > 0) {
      const batch = this.queued;
      this.queued = new Map();
      if (this.dropping) continue;
      const payloads = Array.from(batch, ([orgId, offset]) => JSON.stringify({ orgId, offset, from: this.senderId }));
      try {
        await this.pool.query({ ...NOTIFY_STATEMENT, values: [PG_EVENT_CHANNEL, payloads] });
        this.failing = false;
      } catch (err) {
        if (!this.failing) {
          this.report(
            err as Error,
            "waking other instances (NOTIFY after commit) failed; they find this instance's events by polling until it works again (reported once per outage)",
          );
        }
        this.failing = true;
      }
    }
    this.sending = null;
  }
}
