import { type Kysely, sql } from 'kysely';
import type pg from 'pg';
import { preparedQuery } from '../prepared.js';
import type { Database, IdempotencyKeyTable } from '../types.js';
import type { WriteSet } from '../unit-of-work.js';
import { insertRows, rowArrays } from '../insert-columns.js';
import { appendedEventsResult, appendEventsCtes, eventColumns } from './events.js';

/** Most units written by one statement. */
const MAX_BATCH = 256;

/**
 * Insert-only units of one org as one statement with one offset bump, returning the highest offset. Its WITH clauses
 * commit atomically, and one named statement fits every batch size because each column travels as one array.
 */
const batchStatement = (withAnswers: boolean, withDeadlines: boolean) =>
  preparedQuery((db, p) =>
    sql<{ last_offset: string | number }>`
      with emergency as (${insertRows('emergencies', p, true)}),
      audit as (${insertRows('audit_logs', p, true)}),
      ${withAnswers ? sql`answers as (${insertRows('idempotency_keys', p, false)}),` : sql``}
      ${withDeadlines ? sql`deadlines as (${insertRows('ack_deadlines', p, true)}),` : sql``}
      ${appendEventsCtes(p)}
      ${appendedEventsResult}`.compile(db),
  );
// Most batches carry no Idempotency-Key and no acknowledgement deadline, so they leave those inserts out.
const batchStatements = {
  plain: batchStatement(false, false),
  answers: batchStatement(true, false),
  deadlines: batchStatement(false, true),
  both: batchStatement(true, true),
};

interface Pending {
  writes: WriteSet;
  /** The stored answer of the unit's Idempotency-Key, written in the same statement. */
  answer: IdempotencyKeyTable | null;
  resolve(lastOffset: number): void;
  reject(err: unknown): void;
}

/**
 * Writes by one statement an org's insert-only units (declares) that arrive while its previous one runs: the org row's
 * offset lock would otherwise make each wait for the previous one's WAL flush. An idle org's unit goes at once.
 */
export class PgInsertBatcher {
  private readonly waiting = new Map<string, Pending[]>();

  constructor(private readonly target: { db: Kysely<Database>; dialect: 'postgres'; pgPool: pg.Pool }) {}

  /** Writes one unit whose rows and events all belong to `orgId`; resolves with the offset of its last event. */
  write(orgId: string, writes: WriteSet, answer: IdempotencyKeyTable | null): Promise<number> {
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(orgId);
      if (queue) {
        queue.push({ writes, answer, resolve, reject });
        return;
      }
      this.waiting.set(orgId, [{ writes, answer, resolve, reject }]);
      // A microtask later, so units of the same tick join the first statement.
      queueMicrotask(() => void this.drain(orgId));
    });
  }

  private async drain(orgId: string): Promise<void> {
    const queue = this.waiting.get(orgId)!;
    while (queue.length > 0) {
      const batch = queue.splice(0, MAX_BATCH);
      try {
        // The statement gave the batch's events the offsets up to its last, in the batch's order.
        let offset = (await this.send(orgId, batch)) - batch.reduce((n, pending) => n + pending.writes.eventRows.length, 0);
        for (const pending of batch) {
          offset += pending.writes.eventRows.length;
          pending.resolve(offset);
        }
      } catch (err) {
        // Only a refused statement wrote nothing for sure; a unit that may have committed must not be written twice.
        if (batch.length === 1 || !refusedBeforeCommit(err)) {
          for (const pending of batch) pending.reject(err);
          continue;
        }
        for (const pending of batch) {
          try {
            pending.resolve(await this.send(orgId, [pending]));
          } catch (own) {
            pending.reject(own);
          }
        }
      }
    }
    this.waiting.delete(orgId);
  }

  private async send(orgId: string, batch: Pending[]): Promise<number> {
    const all = <T>(rows: (w: WriteSet) => T[]) => batch.flatMap((pending) => rows(pending.writes));
    const answers = batch.flatMap((pending) => (pending.answer ? [pending.answer] : []));
    const columns = {
      org_id: orgId,
      ...rowArrays(
        'emergencies',
        all((w) => w.emergencyInserts),
        true,
      ),
      ...rowArrays(
        'audit_logs',
        all((w) => w.auditRows),
        true,
      ),
      ...eventColumns(all((w) => w.eventRows)),
    };
    const deadlines = all((w) => w.deadlineRows);
    const statement = batchStatements[answers.length > 0 ? (deadlines.length > 0 ? 'both' : 'answers') : deadlines.length > 0 ? 'deadlines' : 'plain'];
    const [result] = await statement.execute(this.target, {
      ...columns,
      ...(answers.length > 0 ? rowArrays('idempotency_keys', answers, false) : {}),
      ...(deadlines.length > 0 ? rowArrays('ack_deadlines', deadlines, true) : {}),
    });
    if (!result) throw new Error(`Organization ${orgId} does not exist.`);
    return Number(result.last_offset);
  }
}

/** Refused for a row's content (class 23, e.g. a used externalId): nothing was written, and the other units may succeed alone. */
function refusedBeforeCommit(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^23[0-9A-Z]{3}$/.test(code);
}
