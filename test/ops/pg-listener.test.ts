import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import pg from 'pg';
import { createContext } from '../../src/app.js';
import type { AppContext } from '../../src/context.js';
import { loadConfig } from '../../src/config.js';
import { PG_EVENT_CHANNEL } from '../../src/db/postgres/events.js';
import type { CommittedEvent } from '../../src/db/unit-of-work.js';
import { startPgEventListener } from '../../src/db/postgres/listener.js';
import { onPostgres } from '../helpers/db.js';

const base = process.env.DATABASE_URL ?? '';

/** A TCP relay to PostgreSQL whose connections the test can cut, as a network failure would. */
async function startRelay(target: URL): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = connect(Number(target.port || 5432), target.hostname);
    for (const [s, other] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      sockets.add(s);
      s.on('error', () => other.destroy());
      s.on('close', () => {
        sockets.delete(s);
        other.destroy();
      });
      s.pipe(other);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The wake-ups a context's bus hears for an org of the test's own (other suites notify on the same channel). */
function heardForNewOrg(ctx: AppContext): { orgId: string; heard: CommittedEvent[] } {
  const orgId = randomUUID();
  const heard: CommittedEvent[] = [];
  ctx.eventLog.onCommitted((event) => {
    if (event.orgId === orgId) heard.push(event);
  });
  return { orgId, heard };
}

/** A plain session that sends notifications as another instance would. */
async function connectWriter(): Promise<pg.Client> {
  const writer = new pg.Client({ connectionString: base });
  await writer.connect();
  return writer;
}

describe('the PostgreSQL event listener', { skip: onPostgres ? false : 'LISTEN/NOTIFY exists only on PostgreSQL (CI runs this suite there)' }, () => {
  it('reports a lost LISTEN connection, reconnects, and hears other instances again', { timeout: 30_000 }, async () => {
    const relay = await startRelay(new URL(base));
    const ctx = createContext(loadConfig({ DATABASE_URL: relay.url, LOG_LEVEL: 'silent' }));
    const reported: string[] = [];
    const stop = startPgEventListener(
      ctx.db,
      (event) => ctx.eventLog.committed(event),
      (_err, consequence) => reported.push(consequence),
    );
    const { orgId, heard } = heardForNewOrg(ctx);
    // Another instance's commit, straight to PostgreSQL (not through the relay).
    const writer = await connectWriter();
    const notifyUntilHeard = async (offset: number) => {
      const deadline = Date.now() + 10_000;
      while (!heard.some((e) => e.offset === offset)) {
        assert.ok(Date.now() < deadline, `offset ${offset} was not heard`);
        await writer.query('select pg_notify($1, $2)', [PG_EVENT_CHANNEL, JSON.stringify({ orgId, offset })]);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    try {
      await notifyUntilHeard(1);
      relay.cut();
      const deadline = Date.now() + 5_000;
      while (reported.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.match(reported[0] ?? '', /LISTEN connection failed; reconnecting/);
      await notifyUntilHeard(2);
    } finally {
      await writer.end();
      await stop();
      await ctx.db.close();
      relay.cut();
      await relay.close();
    }
  });

  it("wakes its readers with other instances' notifications only: its own commits woke them already", { timeout: 30_000 }, async () => {
    const ctx = createContext(loadConfig({ DATABASE_URL: base, LOG_LEVEL: 'silent' }));
    const stop = startPgEventListener(ctx.db, (event) => ctx.eventLog.committed(event));
    const { orgId, heard } = heardForNewOrg(ctx);
    const writer = await connectWriter();
    try {
      const own = ctx.db.pgNotifier!.senderId;
      // One session's notifications arrive in the order sent: once offset 2 (another instance's) is
      // heard, offset 1 (this instance's own) has been delivered to the listener too, and skipped.
      const deadline = Date.now() + 10_000;
      while (!heard.some((e) => e.offset === 2)) {
        assert.ok(Date.now() < deadline, 'the other instance was not heard');
        await writer.query('select pg_notify($1, $2)', [PG_EVENT_CHANNEL, JSON.stringify({ orgId, offset: 1, from: own })]);
        await writer.query('select pg_notify($1, $2)', [PG_EVENT_CHANNEL, JSON.stringify({ orgId, offset: 2, from: 'another-instance' })]);
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.deepEqual(
        heard.filter((e) => e.offset === 1),
        [],
      );
      assert.deepEqual(heard[0], { orgId, offset: 2 });
    } finally {
      await writer.end();
      await stop();
      await ctx.db.close();
    }
  });
});
