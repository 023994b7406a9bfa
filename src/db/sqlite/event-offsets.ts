import type BetterSqlite3 from 'better-sqlite3';

/**
 * Org stream offsets of one group-commit batch: the batch holds SQLite's write lock until its commit, so no other
 * writer can take an offset meanwhile, and each org's row is read once and written back once, before COMMIT.
 */
export class BatchEventOffsets {
  // Prepared on first use: the connection opens before the migrations create the orgs table.
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

  /** State to return to if the job about to run is rolled back to its savepoint, giving its offsets back. */
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
