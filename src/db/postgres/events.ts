import { sql } from 'kysely';
import type { EmergencyInsert, EventInsert } from '../unit-of-work.js';
import type { AuditLogTable, IdempotencyKeyTable } from '../types.js';

/** The channel on which an instance announces `{orgId, offset}` to every instance once a write has committed (notifier.ts). */
export const PG_EVENT_CHANNEL = 'emergency_events';

/** A value placeholder of a prepared query (see preparedQuery). */
type Param = (name: string) => any;

/**
 * The org's event offsets on PostgreSQL, the one place they are taken: the org row is bumped by the
 * number of new events (its lock is held until the commit, so an org's offsets commit in order and
 * without gaps), and the events take the offsets below the new value in the order given. These are
 * the CTEs that do it, to end a WITH list; `appendedEventsResult` is the statement's final SELECT.
 */
export const appendEventsCtes = (p: Param) => sql`
  input as (
    select * from unnest(
      ${p('event_ids')}::text[], ${p('event_emergency_ids')}::text[], ${p('event_types')}::text[], ${p('event_sequences')}::integer[],
      ${p('payloads')}::text[], ${p('event_created_ats')}::text[]
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

/**
 * Rows as parallel arrays, one per column, each under the name of its statement parameter: one
 * statement (unnest of the arrays) writes any number of rows.
 */
export function columnArrays<R, N extends string>(rows: readonly R[], names: Record<N, keyof R>): Record<N, unknown[]> {
  const arrays = {} as Record<N, unknown[]>;
  for (const name in names) arrays[name] = rows.map((row) => row[names[name]]);
  return arrays;
}

/** The event columns as parallel arrays, one statement for any number of events. */
export function eventColumns(events: EventInsert[]) {
  return columnArrays(events, {
    event_ids: 'id',
    event_emergency_ids: 'emergency_id',
    event_types: 'event_type',
    event_sequences: 'sequence',
    payloads: 'payload',
    event_created_ats: 'created_at',
  });
}

/** Emergency rows of one org as parallel arrays (every column as the service built it; the org travels once, as `org_id`). */
export function emergencyColumns(rows: EmergencyInsert[]) {
  return columnArrays(rows, {
    e_ids: 'id',
    e_statuses: 'status',
    e_external_ids: 'external_id',
    e_category_ids: 'category_id',
    e_sources: 'source',
    e_descriptions: 'description',
    e_occurred_ats: 'occurred_at',
    e_created_ats: 'created_at',
    e_updated_ats: 'updated_at',
    e_declared_bys: 'declared_by',
    e_locations: 'location',
    e_metadatas: 'metadata',
    e_sequences: 'sequence',
    e_records: 'record',
  });
}

export const insertEmergenciesSql = (p: Param) => sql`
  insert into emergencies (id, org_id, status, external_id, category_id, source, description, occurred_at, created_at, updated_at,
    declared_by, location, metadata, sequence, record, record_sequence)
  select id, ${p('org_id')}, status, external_id, category_id, source, description, occurred_at, created_at, updated_at, declared_by,
    location, metadata, sequence, record, sequence
  from unnest(
    ${p('e_ids')}::text[], ${p('e_statuses')}::text[], ${p('e_external_ids')}::text[], ${p('e_category_ids')}::text[],
    ${p('e_sources')}::text[], ${p('e_descriptions')}::text[], ${p('e_occurred_ats')}::text[], ${p('e_created_ats')}::text[],
    ${p('e_updated_ats')}::text[], ${p('e_declared_bys')}::text[], ${p('e_locations')}::text[], ${p('e_metadatas')}::text[],
    ${p('e_sequences')}::integer[], ${p('e_records')}::text[]
  ) as e(id, status, external_id, category_id, source, description, occurred_at, created_at, updated_at, declared_by,
    location, metadata, sequence, record)`;

export function auditColumns(rows: AuditLogTable[]) {
  return columnArrays(rows, {
    a_ids: 'id',
    a_occurred_ats: 'occurred_at',
    a_categories: 'event_category',
    a_types: 'event_type',
    a_actor_types: 'actor_type',
    a_actor_ids: 'actor_id',
    a_actor_names: 'actor_name',
    a_resource_types: 'resource_type',
    a_resource_ids: 'resource_id',
    a_request_ids: 'request_id',
    a_details: 'details',
  });
}

export const insertAuditSql = (p: Param) => sql`
  insert into audit_logs (id, org_id, occurred_at, event_category, event_type, actor_type, actor_id, actor_name, resource_type,
    resource_id, request_id, details)
  select id, ${p('org_id')}, occurred_at, event_category, event_type, actor_type, actor_id, actor_name, resource_type, resource_id,
    request_id, details
  from unnest(
    ${p('a_ids')}::text[], ${p('a_occurred_ats')}::text[], ${p('a_categories')}::text[], ${p('a_types')}::text[],
    ${p('a_actor_types')}::text[], ${p('a_actor_ids')}::text[], ${p('a_actor_names')}::text[], ${p('a_resource_types')}::text[],
    ${p('a_resource_ids')}::text[], ${p('a_request_ids')}::text[], ${p('a_details')}::text[]
  ) as a(id, occurred_at, event_category, event_type, actor_type, actor_id, actor_name, resource_type, resource_id, request_id, details)`;

export function idempotencyColumns(rows: IdempotencyKeyTable[]) {
  return columnArrays(rows, {
    i_api_key_ids: 'api_key_id',
    i_keys: 'idem_key',
    i_fingerprints: 'fingerprint',
    i_statuses: 'status',
    i_bodies: 'body',
    i_locations: 'location',
    i_created_ats: 'created_at',
    i_expires_ats: 'expires_at',
  });
}

export const insertIdempotencySql = (p: Param) => sql`
  insert into idempotency_keys (api_key_id, idem_key, fingerprint, status, body, location, created_at, expires_at)
  select * from unnest(
    ${p('i_api_key_ids')}::text[], ${p('i_keys')}::text[], ${p('i_fingerprints')}::text[], ${p('i_statuses')}::integer[],
    ${p('i_bodies')}::text[], ${p('i_locations')}::text[], ${p('i_created_ats')}::text[], ${p('i_expires_ats')}::text[]
  )`;
