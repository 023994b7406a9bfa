import { sql } from 'kysely';
import type { DbHandle } from '../../db/connect.js';
import { preparedQuery } from '../../db/prepared.js';
import type { AuditLogTable, EmergencyTable, EventTable } from '../../db/types.js';
import { PG_EVENT_CHANNEL } from '../events/bus.js';

/** The rows one declare writes on PostgreSQL (every column involved is text), as the service builds them. */
export interface DeclareRows {
  emergency: Pick<
    EmergencyTable,
    'id' | 'external_id' | 'category_id' | 'source' | 'description' | 'occurred_at' | 'created_at' | 'declared_by' | 'location' | 'metadata'
  > & { record: string };
  audit: Pick<AuditLogTable, 'id' | 'actor_type' | 'actor_id' | 'actor_name' | 'request_id' | 'details'>;
  event: Pick<EventTable, 'id' | 'payload' | 'created_at'>;
}

/** Most declares written by one statement. */
const MAX_BATCH = 256;

/**
 * The declares of one org, any number of them, as one statement: emergencies, audit entries, one
 * offset bump for all, the events at consecutive offsets in input order, and one wake-up carrying
 * the highest. Data-modifying WITH clauses commit atomically with the statement, and one named
 * statement serves every batch size because each column travels as one array.
 */
const declareBatch = preparedQuery((db, p) =>
  sql<{ last_offset: string | number; declared: string | number }>`
    with input as (
      select * from unnest(
        ${p('ids')}::text[], ${p('external_ids')}::text[], ${p('category_ids')}::text[], ${p('sources')}::text[],
        ${p('descriptions')}::text[], ${p('occurred_ats')}::text[], ${p('created_ats')}::text[], ${p('declared_bys')}::text[],
        ${p('locations')}::text[], ${p('metadatas')}::text[], ${p('audit_ids')}::text[], ${p('actor_types')}::text[],
        ${p('actor_ids')}::text[], ${p('actor_names')}::text[], ${p('request_ids')}::text[], ${p('audit_details')}::text[],
        ${p('event_ids')}::text[], ${p('payloads')}::text[], ${p('event_created_ats')}::text[], ${p('records')}::text[]
      ) with ordinality as i(id, external_id, category_id, source, description, occurred_at, created_at, declared_by,
        location, metadata, audit_id, actor_type, actor_id, actor_name, request_id, audit_details, event_id, payload, event_created_at, record, n)
    ), emergency as (
      insert into emergencies (id, org_id, status, external_id, category_id, source, description, occurred_at, created_at, updated_at, declared_by, location, metadata, sequence, record, record_sequence)
      select id, ${p('org_id')}, 'declared', external_id, category_id, source, description, occurred_at, created_at, created_at, declared_by, location, metadata, 1, record, 1
      from input
    ), audit as (
      insert into audit_logs (id, org_id, occurred_at, event_category, event_type, actor_type, actor_id, actor_name, resource_type, resource_id, request_id, details)
      select audit_id, ${p('org_id')}, created_at, 'emergency', 'emergency.declared', actor_type, actor_id, actor_name, 'emergency', id, request_id, audit_details
      from input
    ), bumped as (
      update orgs set event_offset = event_offset + (select count(*) from input) where id = ${p('org_id')} returning event_offset
    ), inserted as (
      insert into events (id, org_id, stream_offset, emergency_id, event_type, sequence, payload, created_at)
      select i.event_id, ${p('org_id')}, b.event_offset - (select count(*) from input) + i.n, i.id, 'emergency.declared', 1, i.payload, i.event_created_at
      from input i cross join bumped b
      returning stream_offset
    )
    select max(stream_offset) as last_offset, count(*) as declared,
      pg_notify(${PG_EVENT_CHANNEL}, json_build_object('orgId', ${p('org_id')}::text, 'offset', max(stream_offset))::text)
    from inserted
    having count(*) > 0`.compile(db),
);

interface Pending {
  rows: DeclareRows;
  resolve(lastOffset: number): void;
  reject(err: unknown): void;
}

/**
 * Group commit for declares on PostgreSQL. Taking an event offset locks the org row until commit, so
 * one org's declares commit one after another, each waiting for the previous one's WAL flush. Here
 * the declares of an org that arrive while its previous statement runs wait for it and are then
 * written together by one statement: one lock, one round trip and one flush for the lot. A declare
 * that finds its org idle goes at once, so nothing waits that would not have waited on the lock.
 *
 * If the statement is refused (say one externalId already exists), nothing of it was written, and
 * each declare of the batch is retried alone so that it gets its own outcome. An error with no
 * SQLSTATE (a lost connection) leaves the outcome unknown: it is not retried, so a declare that may
 * have committed is never written twice.
 */
export class PgDeclareBatcher {
  private readonly waiting = new Map<string, Pending[]>();

  constructor(private readonly db: DbHandle) {}

  /** Writes one declare; resolves with the highest offset its statement wrote, once committed. */
  declare(orgId: string, rows: DeclareRows): Promise<number> {
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(orgId);
      if (queue) {
        queue.push({ rows, resolve, reject });
        return;
      }
      this.waiting.set(orgId, [{ rows, resolve, reject }]);
      // A microtask later, so declares of the same tick join the first statement.
      queueMicrotask(() => void this.drain(orgId));
    });
  }

  private async drain(orgId: string): Promise<void> {
    const queue = this.waiting.get(orgId)!;
    while (queue.length > 0) {
      const batch = queue.splice(0, MAX_BATCH);
      try {
        const lastOffset = await this.write(orgId, batch);
        for (const pending of batch) pending.resolve(lastOffset);
      } catch (err) {
        if (batch.length === 1 || !refusedBeforeCommit(err)) {
          for (const pending of batch) pending.reject(err);
          continue;
        }
        for (const pending of batch) {
          try {
            pending.resolve(await this.write(orgId, [pending]));
          } catch (own) {
            pending.reject(own);
          }
        }
      }
    }
    this.waiting.delete(orgId);
  }

  private async write(orgId: string, batch: Pending[]): Promise<number> {
    const column = <T>(get: (rows: DeclareRows) => T) => batch.map((pending) => get(pending.rows));
    const [result] = await declareBatch.execute(this.db, {
      org_id: orgId,
      ids: column((r) => r.emergency.id),
      external_ids: column((r) => r.emergency.external_id),
      category_ids: column((r) => r.emergency.category_id),
      sources: column((r) => r.emergency.source),
      descriptions: column((r) => r.emergency.description),
      occurred_ats: column((r) => r.emergency.occurred_at),
      created_ats: column((r) => r.emergency.created_at),
      declared_bys: column((r) => r.emergency.declared_by),
      locations: column((r) => r.emergency.location),
      metadatas: column((r) => r.emergency.metadata),
      records: column((r) => r.emergency.record),
      audit_ids: column((r) => r.audit.id),
      actor_types: column((r) => r.audit.actor_type),
      actor_ids: column((r) => r.audit.actor_id),
      actor_names: column((r) => r.audit.actor_name),
      request_ids: column((r) => r.audit.request_id),
      audit_details: column((r) => r.audit.details),
      event_ids: column((r) => r.event.id),
      payloads: column((r) => r.event.payload),
      event_created_ats: column((r) => r.event.created_at),
    });
    if (!result) throw new Error(`Organization ${orgId} does not exist.`);
    return Number(result.last_offset);
  }
}

/** PostgreSQL answered with an error (a SQLSTATE): the statement was rolled back and wrote nothing. */
function refusedBeforeCommit(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

const batchers = new WeakMap<DbHandle, PgDeclareBatcher>();

/** The batcher of a database handle (one per pool). */
export function pgDeclareBatcher(db: DbHandle): PgDeclareBatcher {
  let batcher = batchers.get(db);
  if (!batcher) {
    batcher = new PgDeclareBatcher(db);
    batchers.set(db, batcher);
  }
  return batcher;
}
