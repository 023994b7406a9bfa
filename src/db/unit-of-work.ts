import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { AttachmentTable, AuditLogTable, Database, EmergencyTable, EventTable, MessageDedupeTable, MessageTable, ResolutionTable } from './types.js';

/**
 * What a service talks to when it changes state. An operation is stated once, in the domain, as the
 * rows it writes; how they reach a database (one statement or several, a group commit, a batch of an
 * org's concurrent declares, prepared statements, the org's event offsets) is the storage adapter's
 * business (src/db/sqlite, src/db/postgres).
 */

/** An emergency row as the service writes it (every column: the adapter adds nothing). */
export type EmergencyInsert = Omit<EmergencyTable, 'record' | 'record_sequence'> & { record: string };

/** An emergency row as an adapter writes it. */
export type EmergencyRow = EmergencyInsert & { record_sequence: number };

/** The columns a transition changes; `record` is the emergency's new API record at `sequence`. */
export type EmergencyChange = Pick<EmergencyTable, 'status' | 'category_id' | 'sequence' | 'updated_at'> & { record: string };

/** An event without its stream offset: the adapter gives it the org's next offset when it is written. */
export type EventInsert = Omit<EventTable, 'stream_offset'>;

/** A commit that wrote events of an org: what readers of the org's stream are woken up with. */
export interface CommittedEvent {
  orgId: string;
  /** The highest offset the commit wrote for the org. */
  offset: number;
  /**
   * The org's events the commit wrote, in offset order and ending at `offset`, as the service
   * recorded them, when the writer has them at hand (never in a wake-up from another instance): a
   * reader of this process that has read up to the first one's predecessor delivers them at once
   * instead of reading them back. Nothing is built from them unless a reader takes them.
   */
  written?: readonly EventInsert[];
}

/**
 * Writes recorded by a unit of work and sent by the adapter when the unit ends, in this order:
 * emergencies, resolutions, messages with their attachments, audit entries, events. Events go last because taking an org's offset
 * locks its stream until the commit; the shorter that lock, the less an org's writers wait.
 */
export interface Writes {
  emergencies: {
    insert(row: EmergencyInsert): void;
    update(orgId: string, id: string, change: EmergencyChange): void;
  };
  resolutions: { insert(row: ResolutionTable): void };
  /**
   * A message of an existing conversation, with its attachments (in position order) and, for an
   * all-inline message, its dedupe row (whose primary key makes a concurrent identical post fail).
   */
  messages: { insert(message: MessageTable, attachments: readonly AttachmentTable[], dedupe: MessageDedupeTable | null): void };
  audit: { record(row: AuditLogTable): void };
  events: { append(event: EventInsert): void };
}

/** An emergency row as locked for a change: its stored record and what a transition needs. */
export interface LockedEmergency {
  id: string;
  org_id: string;
  status: string;
  category_id: string;
  sequence: number;
  record: string;
}

/** One transaction: reads run at once, the recorded writes are sent when `fn` returns, then it commits. */
export interface UnitOfWork extends Writes {
  /** Dialect-neutral queries inside the transaction, run at once (reads, and writes of other tables). */
  db: Kysely<Database>;
  emergencies: Writes['emergencies'] & {
    /** The emergency, locked against concurrent changes until the commit; undefined when the org has no such emergency. */
    lockForChange(orgId: string, id: string): Promise<LockedEmergency | undefined>;
  };
  /** Work to run once the transaction has committed (wake-ups, never state changes). */
  afterCommit(fn: () => void): void;
  /**
   * The query, locking the rows it reads and skipping rows another transaction holds (PostgreSQL's
   * FOR UPDATE SKIP LOCKED), so concurrent workers claim disjoint rows. SQLite transactions run one
   * at a time, so there nothing is ever held by another and the query is returned as it is.
   */
  skipLocked<Q extends SelectQueryBuilder<any, any, any>>(query: Q): Q;
}

/** What an adapter supplies for a unit of work besides the recorded writes. */
export interface UnitOfWorkParts {
  db: Kysely<Database>;
  lockForChange: UnitOfWork['emergencies']['lockForChange'];
  afterCommit(fn: () => void): void;
  skipLocked: UnitOfWork['skipLocked'];
}

/** The buffered writes of one unit, in the order the adapter sends them. */
export class WriteSet implements Writes {
  /** Rows as stored: the record is valid at the row's sequence. */
  readonly emergencyInserts: EmergencyRow[] = [];
  readonly emergencyChanges: { orgId: string; id: string; change: EmergencyChange & { record_sequence: number } }[] = [];
  readonly resolutionRows: ResolutionTable[] = [];
  readonly messageRows: MessageTable[] = [];
  readonly attachmentRows: AttachmentTable[] = [];
  readonly dedupeRows: MessageDedupeTable[] = [];
  readonly auditRows: AuditLogTable[] = [];
  readonly eventRows: EventInsert[] = [];

  readonly emergencies = {
    insert: (row: EmergencyInsert) => void this.emergencyInserts.push({ ...row, record_sequence: row.sequence }),
    update: (orgId: string, id: string, change: EmergencyChange) =>
      void this.emergencyChanges.push({ orgId, id, change: { ...change, record_sequence: change.sequence } }),
  };
  readonly resolutions = { insert: (row: ResolutionTable) => void this.resolutionRows.push(row) };
  readonly messages = {
    insert: (message: MessageTable, attachments: readonly AttachmentTable[], dedupe: MessageDedupeTable | null) => {
      this.messageRows.push(message);
      this.attachmentRows.push(...attachments);
      if (dedupe) this.dedupeRows.push(dedupe);
    },
  };
  readonly audit = { record: (row: AuditLogTable) => void this.auditRows.push(row) };
  readonly events = { append: (event: EventInsert) => void this.eventRows.push(event) };

  /** The unit of work a service sees: the adapter's reads and locks, writes recorded here. */
  unitOfWork(parts: UnitOfWorkParts): UnitOfWork {
    return {
      db: parts.db,
      emergencies: { ...this.emergencies, lockForChange: parts.lockForChange },
      resolutions: this.resolutions,
      messages: this.messages,
      audit: this.audit,
      events: this.events,
      afterCommit: parts.afterCommit,
      skipLocked: parts.skipLocked,
    };
  }

  /** Only new rows (no change of an existing one): such units may be written together by one statement. */
  get insertsOnly(): boolean {
    return this.emergencyChanges.length === 0 && this.resolutionRows.length === 0;
  }

  /** Whether every emergency, message, attachment and audit row recorded is `orgId`'s (one statement writes the org once). */
  rowsAllOf(orgId: string): boolean {
    return (
      this.emergencyInserts.every((row) => row.org_id === orgId) &&
      this.messageRows.every((row) => row.org_id === orgId) &&
      this.attachmentRows.every((row) => row.org_id === orgId) &&
      this.dedupeRows.every((row) => row.org_id === orgId) &&
      this.auditRows.every((row) => row.org_id === orgId)
    );
  }

  /** The events of each org, in the order they were appended. */
  eventsByOrg(): Map<string, EventInsert[]> {
    const byOrg = new Map<string, EventInsert[]>();
    for (const event of this.eventRows) {
      const list = byOrg.get(event.org_id);
      if (list) list.push(event);
      else byOrg.set(event.org_id, [event]);
    }
    return byOrg;
  }
}
