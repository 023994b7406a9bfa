import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type { SqliteStatements } from '../handle.js';
import type { Database } from '../types.js';
import { type CommittedEvent, type UnitOfWork, WriteSet } from '../unit-of-work.js';
import { BatchEventOffsets } from './event-offsets.js';
import { type IdempotencyScope, idempotencyRow, openScope } from '../idempotency.js';
import { type JobConnection, lockEmergency, sendWrites, storeAnswer } from './writes.js';

/** Most transactions committed together; bounds the latency one batch adds to its first request. */
const MAX_BATCH = 128;

interface Job {
  /** A transaction that reads as it goes; null for one whose writes were recorded up front (`record`). */
  fn: ((uow: UnitOfWork) => Promise<unknown>) | null;
  /** Writes recorded without reading (a declare): no unit of work is built for them. */
  record: ((writes: WriteSet) => void) | null;
  /** What a recorded job hands back. */
  result: unknown;
  /** The Idempotency-Key of the request that queued the job, if its answer is still to be stored. */
  scope: IdempotencyScope | undefined;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

type Outcome = { job: Job; ok: true; value: unknown; afterCommit: (() => void)[]; committed: CommittedEvent[] } | { job: Job; ok: false; error: unknown };

/**
 * Group commit for the single SQLite connection. Each commit costs a WAL append of every page the
 * transaction touched plus BEGIN/COMMIT round trips through the driver; with many requests waiting,
 * that per-commit cost dominates. Transactions that queued while the previous batch ran are run one
 * after another inside one SQLite transaction, each under its own savepoint:
 *
 * - a transaction that throws is rolled back to its savepoint alone and gets its own error; the
 *   others in the batch are unaffected;
 * - nothing is acknowledged before the batch has committed: results are handed back (and afterCommit
 *   callbacks run, in order) only after COMMIT returns; if COMMIT fails, every transaction of the
 *   batch fails;
 * - transactions run strictly one at a time in queue order, exactly as separate transactions would,
 *   so per-org event offsets stay gap-free and commit in increasing order.
 *
 * A batch starts right after the I/O phase that queued its first transaction.
 */
export class SqliteGroupCommitter {
  private readonly queue: Job[] = [];
  private draining = false;
  /** Prepared once: exec() would parse these statements again for every job of every batch. */
  private readonly savepoint: BetterSqlite3.Statement;
  private readonly release: BetterSqlite3.Statement;
  private readonly rollbackTo: BetterSqlite3.Statement;
  private readonly offsets: BatchEventOffsets;

  constructor(
    private readonly db: Kysely<Database>,
    sqlite: BetterSqlite3.Database,
    private readonly statements: SqliteStatements,
    /** Told of every org whose stream advanced, once the batch has committed (before the jobs' own callbacks). */
    private readonly onCommitted: (event: CommittedEvent) => void,
  ) {
    this.savepoint = sqlite.prepare('savepoint group_commit_job');
    this.release = sqlite.prepare('release group_commit_job');
    this.rollbackTo = sqlite.prepare('rollback to group_commit_job');
    this.offsets = new BatchEventOffsets(sqlite);
  }

  run<T>(fn: (uow: UnitOfWork) => Promise<T>, idempotency?: IdempotencyScope): Promise<T> {
    return this.enqueue(fn, null, undefined, idempotency) as Promise<T>;
  }

  /** Commits writes recorded without reading anything in the transaction (see DbHandle.commit). */
  record(record: (writes: WriteSet) => void, result: unknown, idempotency?: IdempotencyScope): Promise<unknown> {
    return this.enqueue(null, record, result, idempotency);
  }

  private enqueue(fn: Job['fn'], record: Job['record'], result: unknown, idempotency: IdempotencyScope | undefined): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ fn, record, result, scope: openScope(idempotency), resolve, reject });
      if (this.draining) return;
      this.draining = true;
      // better-sqlite3 is synchronous, so a whole transaction runs in microtasks without yielding to
      // I/O: started at once, every batch would hold one transaction. Starting after the current
      // I/O phase lets the requests that arrived together queue first; it delays nothing else.
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) await this.runBatch(this.queue.splice(0, MAX_BATCH));
    } finally {
      this.draining = false;
    }
  }

  private async runBatch(batch: Job[]): Promise<void> {
    const outcomes: Outcome[] = [];
    try {
      await this.db.transaction().execute(async (trx) => {
        const statements = this.statements;
        const connection: JobConnection = { db: trx, dialect: 'sqlite', sqliteDirect: () => statements };
        this.offsets.begin();
        if (batch.length === 1) {
          // Alone in its batch: an ordinary transaction, rolled back whole if it throws.
          outcomes.push({ job: batch[0]!, ok: true, ...(await this.runJob(connection, batch[0]!)) });
        } else {
          for (const job of batch) outcomes.push(await this.runInSavepoint(connection, job));
        }
        this.offsets.flush();
      });
    } catch (error) {
      // Not committed: the transactions that had succeeded fail with the cause; the others keep their own error.
      for (const job of batch) {
        const own = outcomes.find((o) => o.job === job);
        job.reject(own && !own.ok ? own.error : error);
      }
      return;
    }
    for (const outcome of outcomes) {
      if (!outcome.ok) {
        outcome.job.reject(outcome.error);
        continue;
      }
      try {
        for (const event of outcome.committed) this.onCommitted(event);
        for (const cb of outcome.afterCommit) cb();
        outcome.job.resolve(outcome.value);
      } catch (err) {
        outcome.job.reject(err);
      }
    }
  }

  /**
   * Runs one job on the batch's transaction: its reads at once, then its recorded writes, with the
   * batch's offsets. Statements run straight on the connection (the batch holds Kysely's lock on it).
   */
  private async runJob(connection: JobConnection, job: Job) {
    const trx = connection.db;
    const writes = new WriteSet();
    const afterCommit: (() => void)[] = [];
    let value = job.result;
    if (job.record) job.record(writes);
    else
      value = await job.fn!(
        writes.unitOfWork({
          db: trx,
          lockForChange: (orgId, id) => lockEmergency(connection, orgId, id),
          afterCommit: (cb) => afterCommit.push(cb),
          // One transaction at a time: nothing is ever held by another.
          skipLocked: (query) => query,
        }),
      );
    const committed = sendWrites(connection, writes, this.offsets);
    const answer = idempotencyRow(job.scope, value);
    if (answer) {
      storeAnswer(connection, answer);
      afterCommit.unshift(() => {
        job.scope!.stored = true;
      });
    }
    return { value, afterCommit, committed };
  }

  private async runInSavepoint(connection: JobConnection, job: Job): Promise<Outcome> {
    // The batch holds Kysely's connection lock, so these statements run on the batch's transaction.
    this.savepoint.run();
    const mark = this.offsets.mark();
    try {
      const done = await this.runJob(connection, job);
      this.release.run();
      return { job, ok: true, ...done };
    } catch (error) {
      // If SQLite already rolled back the whole transaction (I/O error, disk full), these throw and
      // the batch fails as a whole, which is the truth.
      this.rollbackTo.run();
      this.release.run();
      this.offsets.restore(mark);
      return { job, ok: false, error };
    }
  }
}
