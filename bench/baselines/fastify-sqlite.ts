// Baseline: the least a declare can cost on this stack — a bare Fastify handler doing two inserts in
// one better-sqlite3 transaction (WAL, synchronous=NORMAL), and a bare JSON echo for reads.
import { randomUUID } from 'node:crypto';
import BetterSqlite3 from 'better-sqlite3';
import Fastify from 'fastify';

const db = new BetterSqlite3(process.env.BASELINE_DB ?? ':memory:');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('create table if not exists a (id text primary key, org_id text, body text, created_at text)');
db.exec('create table if not exists b (id text primary key, a_id text, payload text, created_at text)');
const insertA = db.prepare('insert into a values (?, ?, ?, ?)');
const insertB = db.prepare('insert into b values (?, ?, ?, ?)');
const twoInserts = db.transaction((body: string) => {
  const id = randomUUID();
  const now = new Date().toISOString();
  insertA.run(id, 'org', body, now);
  insertB.run(randomUUID(), id, body, now);
  return id;
});

const app = Fastify();
app.post('/insert', async (req, reply) => reply.code(201).send({ id: twoInserts(JSON.stringify(req.body)) }));
app.get('/echo', async () => ({ hello: 'world', at: new Date().toISOString() }));
app.get('/health', async () => ({ ok: true }));
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
