// Baseline: the least a declare can cost on this stack — a bare Fastify handler doing two inserts in
// one better-sqlite3 transaction (WAL, synchronous=NORMAL), and a bare JSON echo for reads.
import Fastify from 'fastify';
import { openTwoInsertDb } from './two-insert-db.js';

const { twoInserts } = openTwoInsertDb(process.env.BASELINE_DB ?? ':memory:');

const app = Fastify();
app.post('/insert', async (req, reply) => reply.code(201).send({ id: twoInserts(JSON.stringify(req.body)) }));
app.get('/echo', async () => ({ hello: 'world', at: new Date().toISOString() }));
app.get('/health', async () => ({ ok: true }));
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
