import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { IdempotencyScope } from './idempotency.js';
import type {
  AckDeadlineTable,
  AttachmentTable,
  AuditLogTable,
  Database,
  EmergencyTable,
  EventTable,
  MessageDedupeTable,
  MessageTable,
  ResolutionTable,
} from './types.js';

// A service states an operation as the rows it writes; how they reach the database is the adapter's business.

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
   * The events written, in offset order up to `offset`, when the writer has them (never from another instance):
   * a reader caught up to the first one delivers them without reading them back.
   */
  written?: readonly EventInsert[];
}

/**
 * Writes recorded by a unit of work and sent when it ends, events last: taking an org's offset locks its stream
 * until the commit, and the shorter that lock, the less the org's writers wait.
 */
export interface Writes {
  emergencies: {
    insert(row: EmergencyInsert): void;
    update(orgId: string, id: string, change: EmergencyChange): void;
  };
  resolutions: { insert(row: ResolutionTable): void };
  /** A message of an existing conversation with its attachments and, if all-inline, a dedupe row whose key fails an identical concurrent post. */
  messages: { insert(message: MessageTable, attachments: readonly AttachmentTable[], dedupe: MessageDedupeTable | null): void };
  audit: { record(row: AuditLogTable): void };
  /** An event's acknowledgement deadline, written with the event it watches. */
  deadlines: { insert(row: AckDeadlineTable): void };
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
  /** The query with FOR UPDATE SKIP LOCKED, so concurrent workers claim disjoint rows (unchanged on SQLite: one transaction at a time). */
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
  readonly deadlineRows: AckDeadlineTable[] = [];
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
  readonly deadlines = { insert: (row: AckDeadlineTable) => void this.deadlineRows.push(row) };
  readonly events = { append: (event: EventInsert) => void this.eventRows.push(event) };

  /** The unit of work a service sees: the adapter's reads and locks, writes recorded here. */
  unitOfWork(parts: UnitOfWorkParts): UnitOfWork {
    return {
      db: parts.db,
      emergencies: { ...this.emergencies, lockForChange: parts.lockForChange },
      resolutions: this.resolutions,
      messages: this.messages,
      audit: this.audit,
      deadlines: this.deadlines,
      events: this.events,
      afterCommit: parts.afterCommit,
      skipLocked: parts.skipLocked,
    };
  }

  /** Only new rows (no change of an existing one): such units may be written together by one statement. */
  get insertsOnly(): boolean {
    return this.emergencyChanges.length === 0 && this.resolutionRows.length === 0;
  }

  /** Whether every emergency, message, attachment, audit and deadline row recorded is `orgId`'s (one statement writes the org once). */
  rowsAllOf(orgId: string): boolean {
    return (
      this.emergencyInserts.every((row) => row.org_id === orgId) &&
      this.messageRows.every((row) => row.org_id === orgId) &&
      this.attachmentRows.every((row) => row.org_id === orgId) &&
      this.dedupeRows.every((row) => row.org_id === orgId) &&
      this.auditRows.every((row) => row.org_id === orgId) &&
      this.deadlineRows.every((row) => row.org_id === orgId)
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

/** How a write is made: with the request's Idempotency-Key, its answer is stored in the write's own transaction. */
export interface WriteOptions {
  idempotency?: IdempotencyScope;
}
