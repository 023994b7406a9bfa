import { sql } from 'kysely';

/** The channel on which an instance announces `{orgId, offset}` to every instance once a write has committed (notifier.ts). */
export const PG_EVENT_CHANNEL = 'emergency_events';

/** A value placeholder of a prepared query (see preparedQuery). */
type Param = (name: string) => any;

/**
 * Rows travel to PostgreSQL as one JSON array per table, read back by json_to_recordset: one parameter
 * for any number of rows, serialized by JSON.stringify. (Parallel text[] arrays, the alternative, are
 * serialized by the pg driver's per-element escaping, which cost a declare about 40 µs of the event
 * loop in CPU profiles of bench/declare.ts, more than any other part of the statement.)
 */
export function rowsJson(rows: readonly object[]): string {
  const json = JSON.stringify(rows);
  // JSON.stringify writes a lone surrogate (text such as "\ud800" sent in a request body) as a \u
  // escape, which PostgreSQL refuses to turn into text. Such text is made well-formed first (U+FFFD in
  // its place, as UTF-8 encoding does to the same text on any other path). The test is loose: an
  // escaped backslash before "ud8" also takes this slower path, which gives the same result.
  return LONE_SURROGATE_ESCAPE.test(json)
    ? JSON.stringify(rows, (_key, value) => (typeof value === 'string' ? (value as WellFormable).toWellFormed() : value))
    : json;
}

const LONE_SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
/** String.prototype.toWellFormed (Node.js 20), missing from the ES2022 library the project compiles against. */
type WellFormable = string & { toWellFormed(): string };

/**
 * The org's event offsets on PostgreSQL, the one place they are taken: the org row is bumped by the
 * number of new events (its lock is held until the commit, so an org's offsets commit in order and
 * without gaps), and the events take the offsets below the new value in the order given. These are
 * the CTEs that do it, to end a WITH list; `appendedEventsResult` is the statement's final SELECT.
 * The events are `p('events')`, their rows as `rowsJson`.
 */
export const appendEventsCtes = (p: Param) => sql`
  input as (
    select * from rows from (
      json_to_recordset(${p('events')}::json) as (id text, emergency_id text, event_type text, sequence integer, payload text, created_at text)
    ) with ordinality as i(event_id, emergency_id, event_type, sequence, payload, event_created_at, n)
  ), bumped as (
    update orgs set event_offset = event_offset + (select count(*) from input) where id = ${p('org_id')} returning event_offset
  ), inserted as (
    insert into events (id, org_id, stream_offset, emergency_id, event_type, sequence, payload, created_at)
    select i.event_id, ${p('org_id')}, b.event_offset - (select count(*) from input) + i.n, i.emergency_id, i.event_type, i.sequence, i.payload, i.event_created_at
    from input i cross join bumped b
    returning stream_offset
  )`;

/**
 * The last offset written; no row when the org does not exist (nothing was bumped). Other instances
 * are told of it after the commit (notifier.ts), not by a NOTIFY in this transaction.
 */
export const appendedEventsResult = sql<{ last_offset: string | number }>`
  select max(stream_offset) as last_offset
  from inserted
  having count(*) > 0`;

/** New emergency rows (`p('emergencies')`, as `rowsJson`), each column as the service built it. */
export const insertEmergenciesSql = (p: Param) => sql`
  insert into emergencies (id, org_id, status, external_id, category_id, source, description, occurred_at, created_at, updated_at,
    declared_by, location, metadata, sequence, record, record_sequence)
  select id, org_id, status, external_id, category_id, source, description, occurred_at, created_at, updated_at,
    declared_by, location, metadata, sequence, record, sequence
  from json_to_recordset(${p('emergencies')}::json) as e(id text, org_id text, status text, external_id text, category_id text,
    source text, description text, occurred_at text, created_at text, updated_at text, declared_by text, location text,
    metadata text, sequence integer, record text)`;

/** Audit rows (`p('audit')`, as `rowsJson`). */
export const insertAuditSql = (p: Param) => sql`
  insert into audit_logs (id, org_id, occurred_at, event_category, event_type, actor_type, actor_id, actor_name, resource_type,
    resource_id, request_id, details)
  select id, org_id, occurred_at, event_category, event_type, actor_type, actor_id, actor_name, resource_type, resource_id,
    request_id, details
  from json_to_recordset(${p('audit')}::json) as a(id text, org_id text, occurred_at text, event_category text, event_type text,
    actor_type text, actor_id text, actor_name text, resource_type text, resource_id text, request_id text, details text)`;

/** Stored answers of Idempotency-Keys (`p('answers')`, as `rowsJson`; zero or one per unit). */
export const insertIdempotencySql = (p: Param) => sql`
  insert into idempotency_keys (api_key_id, idem_key, fingerprint, status, body, location, created_at, expires_at)
  select api_key_id, idem_key, fingerprint, status, body, location, created_at, expires_at
  from json_to_recordset(${p('answers')}::json) as k(api_key_id text, idem_key text, fingerprint text, status integer, body text,
    location text, created_at text, expires_at text)`;
