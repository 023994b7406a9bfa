import assert from 'node:assert/strict';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { PG_EVENT_CHANNEL } from '../../src/db/postgres/events.js';
import { startPgEventListener } from '../../src/db/postgres/listener.js';
import { LISTENER_CHECK_MS, PgCommitNotifier } from '../../src/db/postgres/notifier.js';
import type { CommittedEvent } from '../../src/db/unit-of-work.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { connectDevice, type DeviceTestServer, startDeviceServer, type TestDevice } from '../devices/support.js';
import { onPostgres } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';

/** A stand-in for the pool: records each statement's payloads and answers when the test says so. */
function fakePool() {
  const sent: { orgId: string; offset: number }[][] = [];
  const answers: { resolve(): void; reject(err: Error): void }[] = [];
  const senders = new Set<string>();
  const pool = {
    query(config: { name: string; text: string; values: [string, string[]] }) {
      // The notifier first asks whether another instance listens: here one always does.
      if (config.name === 'emergency_api_other_listeners') return Promise.resolve({ rows: [{ listening: true }] });
      assert.match(config.text, /pg_notify/);
      assert.equal(config.values[0], PG_EVENT_CHANNEL);
      sent.push(
        config.values[1].map((p) => {
          // Each payload names its sender, one id for all of this notifier's statements.
          const { from, ...event } = JSON.parse(p);
          assert.match(from, /^[0-9a-f]{16}$/);
          senders.add(from);
          return event;
        }),
      );
      return new Promise<void>((resolve, reject) => answers.push({ resolve, reject }));
    },
  };
  return { pool: pool as unknown as pg.Pool, sent, answers, senders };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** An outside session listening on the channel (no instance of the service: it is not named as one), recording every payload. */
async function observeNotifications(into: CommittedEvent[]): Promise<pg.Client> {
  const observer = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: 'test observer' });
  await observer.connect();
  observer.on('notification', (msg) => {
    if (msg.channel === PG_EVENT_CHANNEL && msg.payload) into.push(JSON.parse(msg.payload));
  });
  await observer.query(`LISTEN ${PG_EVENT_CHANNEL}`);
  return observer;
}

describe('wake-ups sent after the commit (PgCommitNotifier)', () => {
  it('returns at once, sends one statement at a time, and coalesces to the highest offset per org', async () => {
    const { pool, sent, answers, senders } = fakePool();
    const notifier = new PgCommitNotifier(pool, () => assert.fail('nothing failed'));
    notifier.notify([{ orgId: 'a', offset: 1 }]);
    notifier.notify([
      { orgId: 'a', offset: 3 },
      { orgId: 'b', offset: 7 },
    ]);
    assert.equal(sent.length, 0, 'nothing is sent on the caller’s path');
    await turn();
    assert.deepEqual(sent, [
      [
        { orgId: 'a', offset: 3 },
        { orgId: 'b', offset: 7 },
      ],
    ]);
    // While that statement runs, a burst of commits queues; it goes as one statement after it.
    for (let offset = 4; offset <= 40; offset++) notifier.notify([{ orgId: 'a', offset }]);
    notifier.notify([{ orgId: 'c', offset: 2 }]);
    notifier.notify([{ orgId: 'a', offset: 10 }]);
    await turn();
    assert.equal(sent.length, 1, 'one statement at a time');
    answers[0]!.resolve();
    await turn();
    assert.deepEqual(sent[1], [
      { orgId: 'a', offset: 40 },
      { orgId: 'c', offset: 2 },
    ]);
    answers[1]!.resolve();
    await notifier.close();
    notifier.notify([{ orgId: 'a', offset: 41 }]);
    await turn();
    assert.equal(sent.length, 2, 'nothing is sent once closed');
    assert.deepEqual([...senders], [notifier.senderId]);
  });

  it('reports a failure once per outage and otherwise ignores it', async () => {
    const { pool, sent, answers } = fakePool();
    const reported: string[] = [];
    const notifier = new PgCommitNotifier(pool, (_err, consequence) => reported.push(consequence));
    const statement = async (outcome: 'ok' | 'fail', orgId: string) => {
      notifier.notify([{ orgId, offset: 1 }]);
      await turn();
      const answer = answers.at(-1)!;
      if (outcome === 'ok') answer.resolve();
      else answer.reject(new Error('connection refused'));
      await turn();
    };
    await statement('fail', 'a');
    await statement('fail', 'b');
    await statement('fail', 'c');
    assert.equal(reported.length, 1, 'one report for the whole outage');
    assert.match(reported[0]!, /NOTIFY after commit\) failed; they find this instance's events by polling/);
    await statement('ok', 'd');
    await statement('fail', 'e');
    assert.equal(reported.length, 2, 'a new outage is reported again');
    assert.equal(sent.length, 5, 'a failed wake-up is not retried');
    await notifier.close();
  });

  it('sends nothing while dropping', async () => {
    const { pool, sent } = fakePool();
    const notifier = new PgCommitNotifier(pool, () => undefined);
    notifier.dropping = true;
    notifier.notify([{ orgId: 'a', offset: 1 }]);
    await turn();
    assert.equal(sent.length, 0);
    await notifier.close();
  });
});

describe('a lost wake-up between instances on PostgreSQL', {
  skip: onPostgres ? false : 'several instances share a database only on PostgreSQL (CI runs this suite there)',
}, () => {
  const POLL_MS = 300;
  /** Beyond the poll interval: the poll's own read, the event read and the frame, on a busy machine. */
  const MARGIN_MS = 500;
  let a: DeviceTestServer;
  let b: DeviceTestServer;
  let listener: pg.Client;
  const notified: CommittedEvent[] = [];
  before(async () => {
    a = await startDeviceServer({ eventLog: { pollIntervalMs: POLL_MS } });
    b = await startDeviceServer({ databaseUrl: a.databaseUrl, eventLog: { pollIntervalMs: POLL_MS } });
    // Every NOTIFY on the channel, whoever sends it (other suites too: filtered by org below).
    listener = await observeNotifications(notified);
  });
  after(async () => {
    await listener?.end();
    await b?.stop();
    await a?.close();
  });

  it('costs a device on another instance at most the poll interval, and wake-ups resume after', { timeout: 20_000 }, async () => {
    const org = await createOrgTree(a.ctx);
    const { key } = await mintKey(a.ctx, { subjectType: 'org', subjectId: org.orgId });
    const onA = client(a.base, key);
    const device: TestDevice = await connectDevice(b.wsUrl, (await createDevice(a.ctx, operatorCaller(), org.orgId, { name: 'on B' })).token);
    // What instance B's readers were woken with for this org: only B's own commits (none here) and
    // the NOTIFYs its LISTEN connection hears.
    const heardOnB: number[] = [];
    b.ctx.eventLog.onCommitted((event) => {
      if (event.orgId === org.orgId) heardOnB.push(event.offset);
    });
    const notifiedOffsets = () => notified.filter((n) => n.orgId === org.orgId).map((n) => n.offset);
    const waitFor = async (condition: () => boolean, ms: number, what: string) => {
      const deadline = Date.now() + ms;
      while (!condition()) {
        assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const declare = async (n: number) => {
      const res = await onA.post(`/orgs/${org.orgId}/emergencies`, { description: `declare ${n}` });
      assert.equal(res.status, 201);
    };

    // Wake-ups on: A's NOTIFY, sent after its commit, reaches B.
    await declare(1);
    await device.until(() => device.events.length === 1, 2_000, 'the first event on B');
    await waitFor(() => heardOnB.includes(1), 2_000, "A's NOTIFY of offset 1 heard on B");
    assert.deepEqual(notifiedOffsets(), [1]);

    // A loses every wake-up it sends: B's device still gets each event, by B's poll.
    a.ctx.db.pgNotifier!.dropping = true;
    const latencies: number[] = [];
    for (let n = 2; n <= 4; n++) {
      const start = Date.now();
      await declare(n);
      await device.until(() => device.events.length === n, POLL_MS + MARGIN_MS, `event ${n} on B by the poll`);
      latencies.push(Date.now() - start);
    }
    assert.deepEqual(device.offsets(), [1, 2, 3, 4]);
    assert.deepEqual(notifiedOffsets(), [1], 'no NOTIFY was sent for the lost wake-ups');
    assert.deepEqual(heardOnB, [1], 'B was not woken by a notification');
    assert.ok(Math.max(...latencies) <= POLL_MS + MARGIN_MS, `latencies ${latencies.join(', ')} ms`);

    // Wake-ups on again: the next commit is announced to B.
    a.ctx.db.pgNotifier!.dropping = false;
    await declare(5);
    await device.until(() => device.events.length === 5, 2_000, 'event 5 on B');
    await waitFor(() => heardOnB.includes(5), 2_000, "A's NOTIFY of offset 5 heard on B");
    assert.deepEqual(notifiedOffsets(), [1, 5]);
    await device.close();
  });
});

describe('wake-ups only while another instance listens, on PostgreSQL', {
  skip: onPostgres ? false : 'several instances share a database only on PostgreSQL (CI runs this suite there)',
}, () => {
  let a: DeviceTestServer;
  let observer: pg.Client;
  const notified: CommittedEvent[] = [];
  before(async () => {
    a = await startDeviceServer();
    // An outside session on the channel: it sees every NOTIFY but is no instance of the service.
    observer = await observeNotifications(notified);
  });
  after(async () => {
    await observer?.end();
    await a?.close();
  });

  it('sends none while the instance is alone, starts once another listens, and stops after it left', { timeout: 30_000 }, async () => {
    const org = await createOrgTree(a.ctx);
    const { key } = await mintKey(a.ctx, { subjectType: 'org', subjectId: org.orgId });
    const onA = client(a.base, key);
    let declared = 0;
    const declare = async () => {
      const res = await onA.post(`/orgs/${org.orgId}/emergencies`, { description: `declare ${++declared}` });
      assert.equal(res.status, 201);
      return declared;
    };
    const seen = () => notified.filter((n) => n.orgId === org.orgId).map((n) => n.offset);
    const settle = () => new Promise((r) => setTimeout(r, 300));

    // Alone: its own readers were woken in process, and no NOTIFY goes out.
    await declare();
    await declare();
    await settle();
    assert.deepEqual(seen(), []);

    // Another instance of the same database and schema starts listening: within the check interval
    // the commits are announced again, and that instance hears them.
    const other = createContext(loadConfig({ DATABASE_URL: a.databaseUrl, LOG_LEVEL: 'silent' }));
    const heardByOther: number[] = [];
    other.eventLog.onCommitted((event) => {
      if (event.orgId === org.orgId) heardByOther.push(event.offset);
    });
    const stopOther = startPgEventListener(other.db, (event) => other.eventLog.committed(event));
    try {
      const started = Date.now();
      let first = 0;
      while (seen().length === 0) {
        assert.ok(Date.now() - started < LISTENER_CHECK_MS + 3_000, 'no NOTIFY after another instance started listening');
        first = await declare();
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(seen().every((offset) => offset >= 3));
      const deadline = Date.now() + 2_000;
      while (!heardByOther.includes(first)) {
        assert.ok(Date.now() < deadline, `the other instance did not hear offset ${first}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await stopOther();
      await other.db.close();
    }

    // Alone again: once the next check finds no listener, nothing more is sent.
    await new Promise((r) => setTimeout(r, LISTENER_CHECK_MS + 100));
    await declare(); // asks again and finds nobody
    const last = await declare();
    await settle();
    assert.ok(!seen().includes(last), `offset ${last} was announced with nobody listening`);
  });
});
