import type BetterSqlite3 from 'better-sqlite3';

/**
 * The org stream offsets of one SQLite group-commit batch. The batch holds SQLite's write lock from
 * its first statement to its commit, so no other writer (this process or another) can take an offset
 * meanwhile: each org's offset is read once per batch, counted here for every event of the batch, and
 * written back to the org row once, just before the commit. That replaces an UPDATE ... RETURNING per
 * event. Offsets stay gap-free and in commit order; a job rolled back to its savepoint gives its
 * offsets back (see `mark`/`restore`).
 */
export class BatchEventOffsets {
  // One instance per connection, reused by every batch (begin() resets it): the statements are prepared once.
  // Prepared on first use: the connection exists before the migrations have created the orgs table.
  private read?: BetterSqlite3.Statement<[string], { event_offset: number }>;
  private write?: BetterSqlite3.Statement<[number, string]>;
  /** Last offset taken in this batch, by org; `initial` holds what the org row said. */
  private last = new Map<string, number>();
  private initial = new Map<string, number>();

  constructor(private readonly sqlite: BetterSqlite3.Database) {}

  /** Starts a batch: nothing is known of any org until it is read inside the batch's transaction. */
  begin(): void {
    this.last = new Map();
    this.initial = new Map();
  }

  /** The next offset of the org's stream, or null when the org does not exist. */
  next(orgId: string): number | null {
    let last = this.last.get(orgId);
    if (last === undefined) {
      this.read ??= this.sqlite.prepare('select event_offset from orgs where id = ?');
      const row = this.read.get(orgId);
      if (!row) return null;
      last = Number(row.event_offset);
      this.initial.set(orgId, last);
    }
    this.last.set(orgId, last + 1);
    return last + 1;
  }

  /** State to return to if the job about to run is rolled back. */
  mark(): Map<string, number> {
    return new Map(this.last);
  }

  restore(mark: Map<string, number>): void {
    this.last = mark;
  }

  /** Writes each org's last offset to its row; runs inside the batch transaction, before COMMIT. */
  flush(): void {
    for (const [orgId, last] of this.last) {
      if (last === this.initial.get(orgId)) continue;
      this.write ??= this.sqlite.prepare('update orgs set event_offset = ? where id = ?');
      this.write.run(last, orgId);
    }
  }
}
