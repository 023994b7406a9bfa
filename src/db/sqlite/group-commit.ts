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

interface JobDone {
  value: unknown;
  afterCommit: (() => void)[];
  committed: CommittedEvent[];
}

type Outcome = ({ job: Job; ok: true } & JobDone) | { job: Job; ok: false; error: unknown };

/**
 * Group commit for the one SQLite connection: transactions queued while a batch ran share the next commit, whose
 * cost dominates under load. Each runs under its own savepoint, in queue order; none is acknowledged before COMMIT.
 */
export class SqliteGroupCommitter {
  private readonly queue: Job[] = [];
  private draining = false;
  /** Prepared once: exec() would parse these statements again for every job of every batch. */
  private readonly begin: BetterSqlite3.Statement;
  private readonly commit: BetterSqlite3.Statement;
  private readonly rollback: BetterSqlite3.Statement;
  private readonly savepoint: BetterSqlite3.Statement;
  private readonly release: BetterSqlite3.Statement;
  private readonly rollbackTo: BetterSqlite3.Statement;
  private readonly offsets: BatchEventOffsets;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly sqlite: BetterSqlite3.Database,
    private readonly statements: SqliteStatements,
    /** Told of every org whose stream advanced, once the batch has committed (before the jobs' own callbacks). */
    private readonly onCommitted: (event: CommittedEvent) => void,
  ) {
    // As the driver begins its transactions (see ImmediateSqliteDriver): the write lock up front.
    this.begin = sqlite.prepare('begin immediate');
    this.commit = sqlite.prepare('commit');
    this.rollback = sqlite.prepare('rollback');
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
      // better-sqlite3 never yields, so a batch started at once would hold one transaction; starting after
      // this I/O phase lets the requests that arrived together join it.
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
      if (batch.every((job) => job.record)) this.commitRecorded(batch, outcomes);
      else
        await this.db.transaction().execute(async (trx) => {
          const connection: JobConnection = { db: trx, dialect: 'sqlite', sqliteDirect: () => this.statements };
          this.offsets.begin();
          for (const job of batch) outcomes.push(await this.runInBatch(connection, job, batch.length));
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

  /** Recorded jobs read nothing, so their batch runs BEGIN to COMMIT synchronously outside Kysely: nothing can come between. */
  private commitRecorded(batch: Job[], outcomes: Outcome[]): void {
    const connection: JobConnection = { db: this.db, dialect: 'sqlite', sqliteDirect: () => this.statements };
    this.begin.run();
    try {
      this.offsets.begin();
      for (const job of batch) outcomes.push(this.runInBatch(connection, job, batch.length) as Outcome);
      this.offsets.flush();
      this.commit.run();
    } catch (error) {
      if (this.sqlite.inTransaction) this.rollback.run();
      throw error;
    }
  }

  /** Alone, a job is an ordinary transaction whose error fails the batch; among others, it runs under its own savepoint. */
  private runInBatch(connection: JobConnection, job: Job, size: number): Outcome | Promise<Outcome> {
    if (size > 1) return this.runInSavepoint(connection, job);
    const done = this.runJob(connection, job);
    const succeeded = (value: JobDone): Outcome => ({ job, ok: true, ...value });
    return done instanceof Promise ? done.then(succeeded) : succeeded(done);
  }

  /** One job on the batch's transaction: its reads at once, then its recorded writes with the batch's offsets. */
  private runJob(connection: JobConnection, job: Job): JobDone | Promise<JobDone> {
    const writes = new WriteSet();
    const afterCommit: (() => void)[] = [];
    if (job.record) {
      job.record(writes);
      return this.sendJob(connection, job, writes, job.result, afterCommit);
    }
    const unit = writes.unitOfWork({
      db: connection.db,
      lockForChange: (orgId, id) => lockEmergency(connection, orgId, id),
      afterCommit: (cb) => afterCommit.push(cb),
      // One transaction at a time: nothing is ever held by another.
      skipLocked: (query) => query,
    });
    return job.fn!(unit).then((value) => this.sendJob(connection, job, writes, value, afterCommit));
  }

  /** Sends a job's recorded writes and, with an Idempotency-Key, its answer. */
  private sendJob(connection: JobConnection, job: Job, writes: WriteSet, value: unknown, afterCommit: (() => void)[]): JobDone {
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

  private runInSavepoint(connection: JobConnection, job: Job): Outcome | Promise<Outcome> {
    // The batch's transaction is open on the connection (Kysely's lock held, or no yield until COMMIT).
    this.savepoint.run();
    const mark = this.offsets.mark();
    const failed = (error: unknown): Outcome => {
      // If SQLite already rolled back the whole transaction (I/O error, disk full), these throw and fail the batch, rightly.
      this.rollbackTo.run();
      this.release.run();
      this.offsets.restore(mark);
      return { job, ok: false, error };
    };
    const succeeded = (done: JobDone): Outcome => {
      this.release.run();
      return { job, ok: true, ...done };
    };
    try {
      const done = this.runJob(connection, job);
      return done instanceof Promise ? done.then(succeeded).catch(failed) : succeeded(done);
    } catch (error) {
      return failed(error);
    }
  }
}
