// Baseline: the least a declare can cost on PostgreSQL — a bare Fastify handler doing two inserts in
// one transaction through a `pg` Pool (the service's pool size), without any query builder.
// BASELINE_PG_URL names the database; the tables live in a schema of their own, dropped at exit.
// BASELINE_NOTIFY=inside adds a NOTIFY to each transaction (as a writer announcing its commit would),
// BASELINE_NOTIFY=after sends it as a statement of its own once committed, without waiting for it.
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';
import { createTwoInsertSchema } from './pg-two-insert-schema.js';

const url = process.env.BASELINE_PG_URL;
if (!url) throw new Error('BASELINE_PG_URL is required');
const schema = `bench_pg_baseline_${process.pid}`;
const tables = await createTwoInsertSchema(url, schema);

const pool = new pg.Pool({ connectionString: url, max: 10, options: `-c search_path=${schema}` });
const notify = process.env.BASELINE_NOTIFY ?? 'none';
if (!['none', 'inside', 'after'].includes(notify)) throw new Error('BASELINE_NOTIFY is none, inside or after');
const channel = `${schema}_events`;

async function twoInserts(body: string): Promise<string> {
  const id = randomUUID();
  const now = new Date().toISOString();
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query('insert into a values ($1, $2, $3, $4)', [id, 'org', body, now]);
    await client.query('insert into b values ($1, $2, $3, $4)', [randomUUID(), id, body, now]);
    if (notify === 'inside') await client.query('select pg_notify($1, $2)', [channel, id]);
    await client.query('commit');
    if (notify === 'after') pool.query('select pg_notify($1, $2)', [channel, id]).catch(() => undefined);
    return id;
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

const app = Fastify();
app.post('/insert', async (req, reply) => reply.code(201).send({ id: await twoInserts(JSON.stringify(req.body)) }));
app.get('/health', async () => ({ ok: true }));
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });

async function shutdown() {
  await app.close();
  await pool.end();
  await tables.drop();
  process.exit(0);
}
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
