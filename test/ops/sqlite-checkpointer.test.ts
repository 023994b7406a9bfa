import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { startSqliteCheckpointer } from '../../src/db/sqlite/checkpointer.js';

describe('SQLite checkpoint thread', () => {
  it('copies the WAL into the database file in the background, and stops', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'checkpointer-'));
    const path = join(dir, 'db.sqlite');
    const db = new BetterSqlite3(path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('wal_autocheckpoint = 0');
      db.exec('create table t (v text)');
      const insert = db.prepare('insert into t values (?)');
      for (let i = 0; i < 500; i++) insert.run('x'.repeat(1000));
      const before = statSync(path).size;
      const failures: Error[] = [];
      const stop = startSqliteCheckpointer(path, (err) => failures.push(err), 20);
      const deadline = Date.now() + 10_000;
      while (statSync(path).size === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await stop();
      assert.ok(statSync(path).size > before + 400_000, 'the rows reached the database file');
      assert.deepEqual(failures, []);
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports a thread that cannot open the database instead of ending the process, and still stops', { timeout: 10_000 }, async () => {
    // The thread does not hold the process open (it is unref'd): this timer does, while the test waits.
    const keepAlive = setInterval(() => undefined, 1000);
    try {
      let stop: () => Promise<void> = async () => undefined;
      const err = await new Promise<Error>((resolve) => {
        stop = startSqliteCheckpointer(join(tmpdir(), 'no-such-directory-for-checkpoints', 'db.sqlite'), resolve);
      });
      assert.match(err.message, /directory does not exist/);
      await stop();
    } finally {
      clearInterval(keepAlive);
    }
  });
});
