import { type Kysely, sql } from 'kysely';
import type pg from 'pg';
import { preparedQuery } from '../prepared.js';
import type { AttachmentTable, Database, IdempotencyKeyTable, MessageDedupeTable, MessageTable } from '../types.js';
import type { WriteSet } from '../unit-of-work.js';
import { auditColumns, columnArrays, idempotencyColumns, insertAuditSql, insertIdempotencySql } from './events.js';

/** A value placeholder of a prepared query (see preparedQuery). */
type Param = (name: string) => any;

function messageColumns(rows: MessageTable[]) {
  return columnArrays(rows, {
    m_ids: 'id',
    m_conversation_ids: 'conversation_id',
    m_emergency_ids: 'emergency_id',
    m_contents: 'content',
    m_sources: 'source',
    m_author_names: 'author_name',
    m_created_ats: 'created_at',
  });
}

const insertMessagesSql = (p: Param) => sql`
  insert into messages (id, org_id, conversation_id, emergency_id, content, source, author_name, created_at)
  select id, ${p('org_id')}, conversation_id, emergency_id, content, source, author_name, created_at
  from unnest(
    ${p('m_ids')}::text[], ${p('m_conversation_ids')}::text[], ${p('m_emergency_ids')}::text[], ${p('m_contents')}::text[],
    ${p('m_sources')}::text[], ${p('m_author_names')}::text[], ${p('m_created_ats')}::text[]
  ) as m(id, conversation_id, emergency_id, content, source, author_name, created_at)`;

function attachmentColumns(rows: AttachmentTable[]) {
  return columnArrays(rows, {
    t_ids: 'id',
    t_message_ids: 'message_id',
    t_positions: 'position',
    t_kinds: 'kind',
    t_mime_types: 'mime_type',
    t_sources: 'source',
    t_link_urls: 'link_url',
    t_storage_keys: 'storage_key',
    t_sha256s: 'sha256',
    t_sizes: 'size_bytes',
    t_captions: 'caption',
    t_widths: 'width',
    t_heights: 'height',
    t_created_ats: 'created_at',
  });
}

const insertAttachmentsSql = (p: Param) => sql`
  insert into attachments (id, org_id, message_id, position, kind, mime_type, source, link_url, storage_key, sha256, size_bytes,
    caption, width, height, created_at)
  select id, ${p('org_id')}, message_id, position, kind, mime_type, source, link_url, storage_key, sha256, size_bytes, caption, width,
    height, created_at
  from unnest(
    ${p('t_ids')}::text[], ${p('t_message_ids')}::text[], ${p('t_positions')}::integer[], ${p('t_kinds')}::text[],
    ${p('t_mime_types')}::text[], ${p('t_sources')}::text[], ${p('t_link_urls')}::text[], ${p('t_storage_keys')}::text[],
    ${p('t_sha256s')}::text[], ${p('t_sizes')}::integer[], ${p('t_captions')}::text[], ${p('t_widths')}::integer[],
    ${p('t_heights')}::integer[], ${p('t_created_ats')}::text[]
  ) as t(id, message_id, position, kind, mime_type, source, link_url, storage_key, sha256, size_bytes, caption, width, height,
    created_at)`;

function dedupeColumns(rows: MessageDedupeTable[]) {
  return columnArrays(rows, { d_keys: 'dedupe_key', d_message_ids: 'message_id', d_created_ats: 'created_at' });
}

const insertDedupeSql = (p: Param) => sql`
  insert into message_dedupe (org_id, dedupe_key, message_id, created_at)
  select ${p('org_id')}, dedupe_key, message_id, created_at
  from unnest(${p('d_keys')}::text[], ${p('d_message_ids')}::text[], ${p('d_created_ats')}::text[]) as d(dedupe_key, message_id, created_at)`;

/**
 * The rows of a unit that inserts into one org and appends no event (a message post), as one
 * statement. PostgreSQL runs a lone statement as its own transaction, so this is one round trip where
 * BEGIN, an insert per table and COMMIT were four; its WITH clauses all run and commit atomically.
 */
const plainStatement = (withAnswers: boolean) =>
  preparedQuery((db, p) =>
    sql`
      with message as (${insertMessagesSql(p)}),
      attachment as (${insertAttachmentsSql(p)}),
      dedupe as (${insertDedupeSql(p)}),
      ${withAnswers ? sql`answers as (${insertIdempotencySql(p)}),` : sql``}
      audit as (${insertAuditSql(p)})
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
    ...messageColumns(writes.messageRows),
    ...attachmentColumns(writes.attachmentRows),
    ...dedupeColumns(writes.dedupeRows),
    ...auditColumns(writes.auditRows),
  };
  if (answer) await withAnswers.execute(target, { ...columns, ...idempotencyColumns([answer]) });
  else await withoutAnswers.execute(target, columns);
}
