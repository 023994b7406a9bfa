// Baseline: the least a gateway of this design does per alert. An HTTP POST (Fastify) commits two inserts
// (better-sqlite3 with the service's settings, or one `pg` statement on PostgreSQL), then writes one buffer of
// a frame's size to every connected device socket from its event loop (node:net, no WebSocket framing), then
// answers 201. No key check, no validation, no event stream: what is left when the product's own work is
// taken out, so that the device benchmark can show how much of the gateway's time any HTTP-and-commit design
// pays on this machine before its first socket write.
//   PORT               the HTTP port; the devices connect to the plain TCP port that GET /health names
//   BASELINE_FRAME_BYTES the buffer written to each device per alert
//   BASELINE_DB        the SQLite file (default in memory), or BASELINE_PG_URL for PostgreSQL (its own schema,
//                      dropped at exit)
import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import Fastify from 'fastify';
import pg from 'pg';
import { createTwoInsertSchema } from './pg-two-insert-schema.js';
import { openTwoInsertDb } from './two-insert-db.js';

const frame = Buffer.alloc(Number(process.env.BASELINE_FRAME_BYTES ?? 910), 120);
const devices = new Set<Socket>();
const deviceServer = createServer((socket) => {
  socket.setNoDelay(true);
  devices.add(socket);
  socket.on('close', () => devices.delete(socket));
  socket.on('error', () => socket.destroy());
});
await new Promise<void>((resolve) => deviceServer.listen(0, '127.0.0.1', resolve));

/** Commits the alert's two rows; resolves once they are durable as the service's commit is. */
async function openCommit(): Promise<{ commit(body: string): Promise<void> | void; close(): Promise<void> }> {
  const url = process.env.BASELINE_PG_URL;
  if (!url) {
    const { twoInserts, db } = openTwoInsertDb(process.env.BASELINE_DB ?? ':memory:');
    return {
      commit: (body) => void twoInserts(body),
      close: async () => {
        db.close();
      },
    };
  }
  const schema = `bench_commit_fan_out_${process.pid}`;
  const tables = await createTwoInsertSchema(url, schema);
  const pool = new pg.Pool({ connectionString: url, max: 10, options: `-c search_path=${schema}` });
  // One statement, one round trip and one commit, as the service's own one-statement declare.
  const statement = 'with a as (insert into a values ($1, $2, $3, $4)) insert into b values ($5, $1, $3, $4)';
  return {
    commit: async (body) => {
      await pool.query(statement, [randomUUID(), 'org', body, new Date().toISOString(), randomUUID()]);
    },
    close: async () => {
      await pool.end();
      await tables.drop();
    },
  };
}

const store = await openCommit();
const app = Fastify();
app.post('/declare', async (req, reply) => {
  await store.commit(JSON.stringify(req.body));
  for (const socket of devices) socket.write(frame);
  return reply.code(201).send({ ok: true });
});
const devicePort = (deviceServer.address() as AddressInfo).port;
app.get('/health', async () => ({ ok: true, devices: devices.size, devicePort }));
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });

async function shutdown() {
  for (const socket of devices) socket.destroy();
  deviceServer.close();
  await app.close();
  await store.close();
  process.exit(0);
}
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
