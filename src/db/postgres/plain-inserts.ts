import { type Kysely, sql } from 'kysely';
import type pg from 'pg';
import { preparedQuery } from '../prepared.js';
import { insertRows, rowArrays } from '../insert-columns.js';
import type { Database, IdempotencyKeyTable } from '../types.js';
import type { WriteSet } from '../unit-of-work.js';

/** A unit inserting into one org with no event (a message post) as one statement: its own transaction, in one round trip. */
const plainStatement = (withAnswers: boolean) =>
  preparedQuery((db, p) =>
    sql`
      with message as (${insertRows('messages', p, true)}),
      attachment as (${insertRows('attachments', p, true)}),
      dedupe as (${insertRows('message_dedupe', p, true)}),
      ${withAnswers ? sql`answers as (${insertRows('idempotency_keys', p, false)}),` : sql``}
      audit as (${insertRows('audit_logs', p, true)})
      select 1 as written`.compile(db),
  );
const withAnswers = plainStatement(true);
const withoutAnswers = plainStatement(false);

/** Whether `writes` is such a unit, and of which org. */
export function plainInsertsOrg(writes: WriteSet): string | null {
  const orgId = writes.messageRows[0]?.org_id;
  const plain = writes.insertsOnly && writes.eventRows.length === 0 && writes.emergencyInserts.length === 0;
  return plain && orgId && writes.rowsAllOf(orgId) ? orgId : null;
}

/** Writes such a unit (see plainInsertsOrg), with the request's stored answer when it has an Idempotency-Key. */
export async function writePlainInserts(
  target: { db: Kysely<Database>; dialect: 'postgres'; pgPool: pg.Pool },
  orgId: string,
  writes: WriteSet,
  answer: IdempotencyKeyTable | null,
): Promise<void> {
  const columns = {
    org_id: orgId,
    ...rowArrays('messages', writes.messageRows, true),
    ...rowArrays('attachments', writes.attachmentRows, true),
    ...rowArrays('message_dedupe', writes.dedupeRows, true),
    ...rowArrays('audit_logs', writes.auditRows, true),
  };
  if (answer) await withAnswers.execute(target, { ...columns, ...rowArrays('idempotency_keys', [answer], false) });
  else await withoutAnswers.execute(target, columns);
}
