import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { FailureReport } from '../handle.js';
import type { CommittedEvent } from '../unit-of-work.js';
import { PG_EVENT_CHANNEL } from './events.js';

/** One notification per org in one named statement; `from` in the payload lets the sender's own listener skip it. */
const NOTIFY_STATEMENT = {
  name: 'emergency_api_notify_committed',
  text: 'select pg_notify($1, payload) from unnest($2::text[]) as payload',
};

/** How long an answer to "does another instance listen?" is trusted before it is asked again. */
export const LISTENER_CHECK_MS = 1_000;

/** Whether another instance of this database and schema listens, found by its listener's application_name, visible to every role. */
const OTHER_LISTENERS_STATEMENT = {
  name: 'emergency_api_other_listeners',
  text: `select exists (
    select 1 from pg_stat_activity
    where datname = current_database() and application_name like $1 and application_name <> $2
  ) as listening`,
};

/** The application_name of an instance's LISTEN connection; the schema goes in as a digest, as only 63 bytes are kept. */
export function listenerApplicationName(schema: string, instanceId: string): string {
  return `emergency-api listen ${createHash('sha256').update(schema).digest('hex').slice(0, 12)} ${instanceId}`;
}

/**
 * Wakes other instances with a NOTIFY sent after the commit: inside the writing transaction it would hold PostgreSQL's
 * instance-wide notification lock until the commit is flushed, so every writer of the cluster would wait on the previous one.
 * Wake-ups are only hints (readers poll), so `notify` never waits and sends nothing while no other instance listens.
 */
export class PgCommitNotifier {
  /** While true, nothing is sent (as if every notification were lost); tests use it. */
  dropping = false;
  /** Marks this instance's notifications: its own readers were woken at the commit already. */
  readonly senderId = randomBytes(8).toString('hex');
  /** The application_name of this instance's LISTEN connection (listener.ts). */
  readonly listenerApplicationName: string;
  /** What every instance's listener of this database and schema is named like. */
  private readonly listenerNamePattern: string;
  /** Whether another instance listened at the last check; null: not known, so notifications go out. */
  private othersListen: boolean | null = null;
  private checkedAt = 0;
  private queued = new Map<string, number>();
  private sending: Promise<void> | null = null;
  private failing = false;
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly report: FailureReport,
    /** The PostgreSQL schema the instance works in: only listeners of the same one count. */
    schema = 'public',
  ) {
    this.listenerNamePattern = listenerApplicationName(schema, '%');
    this.listenerApplicationName = listenerApplicationName(schema, this.senderId);
  }

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
      if (this.dropping || !(await this.anotherInstanceListens())) continue;
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

  /** True when another instance's listener was connected at the last check (or it is not known). */
  private async anotherInstanceListens(): Promise<boolean> {
    const now = Date.now();
    if (this.othersListen !== null && now - this.checkedAt < LISTENER_CHECK_MS) return this.othersListen;
    this.checkedAt = now;
    try {
      const { rows } = await this.pool.query<{ listening: boolean }>({
        ...OTHER_LISTENERS_STATEMENT,
        values: [this.listenerNamePattern, this.listenerApplicationName],
      });
      this.othersListen = rows[0]?.listening !== false;
    } catch {
      // Not known: notify (a failing database fails the notification too, which is reported).
      this.othersListen = null;
    }
    return this.othersListen ?? true;
  }
}
