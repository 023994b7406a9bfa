// The least a declare's writes can cost on this stack: two inserts into a better-sqlite3 file with the
// service's settings (WAL, synchronous=NORMAL). Shared by the HTTP baseline (fastify-sqlite.ts) and the
// in-process one (bench/commit-path.ts).
import { randomUUID } from 'node:crypto';
import BetterSqlite3 from 'better-sqlite3';

export function openTwoInsertDb(path: string) {
  const db = new BetterSqlite3(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('create table if not exists a (id text primary key, org_id text, body text, created_at text)');
  db.exec('create table if not exists b (id text primary key, a_id text, payload text, created_at text)');
  const insertA = db.prepare('insert into a values (?, ?, ?, ?)');
  const insertB = db.prepare('insert into b values (?, ?, ?, ?)');
  /** The two inserts, in the caller's transaction; returns the first row's id. */
  const insertPair = (body: string) => {
    const id = randomUUID();
    const now = new Date().toISOString();
    insertA.run(id, 'org', body, now);
    insertB.run(randomUUID(), id, body, now);
    return id;
  };
  return {
    db,
    /** One transaction of the two inserts. */
    twoInserts: db.transaction(insertPair),
    /** One transaction of `count` pairs. */
    pairs: db.transaction((body: string, count: number) => {
      for (let i = 0; i < count; i++) insertPair(body);
    }),
  };
}
