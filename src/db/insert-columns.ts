import { type RawBuilder, sql } from 'kysely';
import type { Database } from './types.js';

/** The PostgreSQL type of a column, for the casts of its array parameter. */
type ColumnType = 'text' | 'integer';

type ColumnsOf<T extends keyof Database> = { [C in keyof Database[T] & string]-?: ColumnType };

/**
 * Every column the write path inserts, with its PostgreSQL type. The compiler checks it against the table
 * types, so both adapters' insert statements, built from it, cannot miss a column.
 */
export const INSERT_COLUMNS = {
  emergencies: {
    id: 'text',
    org_id: 'text',
    status: 'text',
    external_id: 'text',
    category_id: 'text',
    source: 'text',
    description: 'text',
    occurred_at: 'text',
    created_at: 'text',
    updated_at: 'text',
    declared_by: 'text',
    location: 'text',
    metadata: 'text',
    sequence: 'integer',
    record: 'text',
    record_sequence: 'integer',
    exercise: 'integer',
  },
  emergency_resolutions: {
    emergency_id: 'text',
    org_id: 'text',
    resolved_at: 'text',
    resolved_by: 'text',
    resolution_note: 'text',
    metadata: 'text',
    created_at: 'text',
  },
  events: {
    id: 'text',
    org_id: 'text',
    stream_offset: 'integer',
    emergency_id: 'text',
    event_type: 'text',
    sequence: 'integer',
    payload: 'text',
    created_at: 'text',
  },
  audit_logs: {
    id: 'text',
    org_id: 'text',
    occurred_at: 'text',
    event_category: 'text',
    event_type: 'text',
    actor_type: 'text',
    actor_id: 'text',
    actor_name: 'text',
    actor_key_id: 'text',
    resource_type: 'text',
    resource_id: 'text',
    request_id: 'text',
    details: 'text',
  },
  messages: {
    id: 'text',
    org_id: 'text',
    conversation_id: 'text',
    emergency_id: 'text',
    content: 'text',
    source: 'text',
    author_name: 'text',
    created_at: 'text',
  },
  attachments: {
    id: 'text',
    org_id: 'text',
    message_id: 'text',
    position: 'integer',
    kind: 'text',
    mime_type: 'text',
    source: 'text',
    link_url: 'text',
    storage_key: 'text',
    sha256: 'text',
    size_bytes: 'integer',
    caption: 'text',
    width: 'integer',
    height: 'integer',
    created_at: 'text',
  },
  message_dedupe: { org_id: 'text', dedupe_key: 'text', message_id: 'text', created_at: 'text' },
  ack_deadlines: {
    event_id: 'text',
    org_id: 'text',
    emergency_id: 'text',
    event_type: 'text',
    deadline_seconds: 'integer',
    resend_at: 'text',
    deadline_at: 'text',
    state: 'text',
    overdue_at: 'text',
    closed_at: 'text',
    event_offset: 'integer',
    check_at: 'text',
  },
  idempotency_keys: {
    api_key_id: 'text',
    idem_key: 'text',
    fingerprint: 'text',
    status: 'integer',
    body: 'text',
    location: 'text',
    created_at: 'text',
    expires_at: 'text',
  },
} as const satisfies { [T in keyof Database]?: ColumnsOf<T> };

export type InsertedTable = keyof typeof INSERT_COLUMNS;
export type InsertColumn<T extends InsertedTable> = keyof (typeof INSERT_COLUMNS)[T] & string;

/** The table's insert columns, in the order stated above. */
export function insertColumns<T extends InsertedTable>(table: T): InsertColumn<T>[] {
  return Object.keys(INSERT_COLUMNS[table]) as InsertColumn<T>[];
}

/** The name of the array parameter that carries one column of a multi-row insert. */
export const arrayParam = (table: InsertedTable, column: string): string => `${table}.${column}`;

/** Rows as one array per column, each under its array parameter's name (see unnestRows). */
export function columnArrays<T extends InsertedTable>(
  table: T,
  rows: readonly Partial<Record<InsertColumn<T>, unknown>>[],
  columns: readonly InsertColumn<T>[] = insertColumns(table),
): Record<string, unknown[]> {
  const arrays: Record<string, unknown[]> = {};
  for (const column of columns) arrays[arrayParam(table, column)] = rows.map((row) => row[column]);
  return arrays;
}

/** A FROM item yielding any number of rows from one array parameter per column (`withOrdinality` adds a column `n`). */
export function unnestRows<T extends InsertedTable>(
  table: T,
  columns: readonly InsertColumn<T>[],
  p: (name: string) => unknown,
  alias: string,
  withOrdinality = false,
): RawBuilder<unknown> {
  const types = INSERT_COLUMNS[table] as Record<string, ColumnType>;
  const arrays = columns.map((column) => sql`${p(arrayParam(table, column))}::${sql.raw(types[column]!)}[]`);
  const names = [...columns, ...(withOrdinality ? ['n'] : [])].map((name) => sql.id(name));
  return sql`unnest(${sql.join(arrays)})${withOrdinality ? sql` with ordinality` : sql``} as ${sql.id(alias)}(${sql.join(names)})`;
}

/** A multi-row insert from one array parameter per column; with `orgOnce`, the rows' one org travels once, as `org_id`. */
export function insertRows<T extends InsertedTable>(table: T, p: (name: string) => unknown, orgOnce: boolean): RawBuilder<unknown> {
  const all = insertColumns(table);
  const arrayed = orgOnce ? all.filter((column) => column !== 'org_id') : all;
  const selected = all.map((column) => (orgOnce && column === 'org_id' ? sql`${p('org_id')}` : sql.ref(`r.${column}`)));
  return sql`insert into ${sql.table(table)} (${sql.join(all.map((c) => sql.id(c)))}) select ${sql.join(selected)} from ${unnestRows(table, arrayed, p, 'r')}`;
}

/** The arrays `insertRows` takes for these rows (without `org_id` when it travels once). */
export function rowArrays<T extends InsertedTable>(
  table: T,
  rows: readonly Partial<Record<InsertColumn<T>, unknown>>[],
  orgOnce: boolean,
): Record<string, unknown[]> {
  const all = insertColumns(table);
  return columnArrays(table, rows, orgOnce ? all.filter((column) => column !== 'org_id') : all);
}
