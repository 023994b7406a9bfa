import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createSubscription } from '../../src/domain/webhooks/service.js';
import { type Receiver, startReceiver, verify } from '../delivery/helpers.js';
import { freePort } from '../helpers/child-server.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { createOrgTree, mintKey } from '../helpers/server.js';

const BIN = resolve(import.meta.dirname, '../../bin/emergency-api.js');
const KILLS = Number(process.env.CRASH_KILLS ?? 10);
const WRITERS = 6;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * SIGKILLs a server at random points while clients declare emergencies. Afterwards every declare
 * that was acknowledged with a 201 must exist, and a webhook subscriber must have received its
 * emergency.declared event (duplicates allowed, loss never).
 */
describe('crash safety of acknowledged declares', () => {
  const database = freshDatabaseUrl();
  let receiver: Receiver;
  let secret = '';
  let key = '';
  let orgId = '';
  let port = 0;
  let server: ChildProcess | null = null;
  const env = () => ({
    ...process.env,
    DATABASE_URL: database.url,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_KEY: '100000',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '0.2,0.5,1,1,1',
    WEBHOOK_TIMEOUT_SECONDS: '2',
  });

  async function startService(): Promise<ChildProcess> {
    const child = spawn(process.execPath, [BIN, 'serve'], { env: env(), stdio: ['ignore', 'ignore', 'inherit'] });
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200) return child;
      } catch {
        /* not listening yet */
      }
      await sleep(50);
    }
    throw new Error('server did not become ready');
  }

  async function kill(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  before(async () => {
    receiver = await startReceiver();
    // A subscriber that takes a moment to answer: at each kill some deliveries are claimed and in
    // flight, which the restarted server must take over rather than wait out their lease.
    receiver.respond('/hook', async (_req, res) => {
      await sleep(100);
      res.writeHead(204).end();
    });
    port = await freePort();
    const ctx = createContext(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }));
    await migrateToLatest(ctx.db);
    const org = await createOrgTree(ctx);
    orgId = org.orgId;
    key = (await mintKey(ctx, { subjectType: 'org', subjectId: orgId })).key;
    secret = (await createSubscription(ctx, operatorCaller(), { subjectType: 'org', subjectId: orgId, url: `${receiver.url}/hook` })).secret;
    await ctx.db.close();
  });

  after(async () => {
    if (server) await kill(server);
    await receiver.close();
    await database.drop();
  });

  /** Emergencies whose declared event's delivery is claimed and unfinished, read while no server runs. */
  async function claimedDeliveries(): Promise<string[]> {
    const ctx = createContext(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }));
    try {
      const rows = await ctx.db.db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('events as e', 'e.id', 'd.event_id')
        .select('e.emergency_id')
        .where('d.status', '=', 'pending')
        .where('d.claimed_by', 'is not', null)
        .where('d.claimed_until', '>', new Date().toISOString())
        .where('d.event_type', '=', 'emergency.declared')
        .execute();
      return rows.map((r) => r.emergency_id);
    } finally {
      await ctx.db.close();
    }
  }

  const declare = (body: object, headers: Record<string, string> = {}) =>
    fetch(`http://127.0.0.1:${port}/api/public/v1/orgs/${orgId}/emergencies`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  it(`loses no acknowledged emergency or its webhook across ${KILLS} SIGKILLs, and writes no Idempotency-Key twice`, async () => {
    const acknowledged = new Set<string>();
    /** When each acknowledged emergency was answered. */
    const acknowledgedAt = new Map<string, number>();
    /** Each SIGKILL, and when the server started after it answered /healthz. */
    const kills: { at: number; healthyAt: number; claimed: string[] }[] = [];
    /** Idempotency-Key → the emergencyId its answers named (every answer of one key must name the same one). */
    const keyed = new Map<string, Set<string>>();
    let stop = false;
    let attempts = 0;
    // Writers without an externalId retry each write with its Idempotency-Key until it is answered,
    // across the kills: the key alone must keep the retries from declaring twice.
    const keyedWriter = async (w: number) => {
      for (let n = 0; !stop; n++) {
        const idempotencyKey = `crash-key-${w}-${n}`;
        for (;;) {
          attempts++;
          try {
            const res = await declare({ description: idempotencyKey }, { 'idempotency-key': idempotencyKey });
            const body = (await res.json()) as { emergencyId?: string };
            if (res.status === 201 && body.emergencyId) {
              acknowledged.add(body.emergencyId);
              acknowledgedAt.set(body.emergencyId, Date.now());
              keyed.set(idempotencyKey, (keyed.get(idempotencyKey) ?? new Set()).add(body.emergencyId));
              break;
            }
          } catch {
            /* down or died mid-request: retried with the same key */
          }
          if (stop && !keyed.has(idempotencyKey)) {
            // Stopping: one last answer is still owed for a key that may have been written.
            await sleep(100);
            continue;
          }
          await sleep(20);
        }
      }
    };
    const writer = async (w: number) => {
      for (let n = 0; !stop; n++) {
        attempts++;
        try {
          const res = await fetch(`http://127.0.0.1:${port}/api/public/v1/orgs/${orgId}/emergencies`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ externalId: `crash-${w}-${n}`, description: 'crash test' }),
          });
          const body = (await res.json()) as { emergencyId?: string };
          if (res.status === 201 && body.emergencyId) {
            acknowledged.add(body.emergencyId);
            acknowledgedAt.set(body.emergencyId, Date.now());
          }
        } catch {
          // The server is down or died mid-request: the outcome is unknown, so it is not counted.
          await sleep(20);
        }
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, w) => (w < WRITERS / 2 ? writer(w) : keyedWriter(w)));
    const perKill: number[] = [];
    let committedBeforeKill: { idempotencyKey: string; emergencyId: string } | null = null;
    for (let k = 0; k < KILLS; k++) {
      server = await startService();
      if (k > 0) kills[k - 1]!.healthyAt = Date.now();
      if (committedBeforeKill) {
        // The write answered just before the last SIGKILL is replayed, not written again.
        const retry = await declare({ description: committedBeforeKill.idempotencyKey }, { 'idempotency-key': committedBeforeKill.idempotencyKey });
        assert.equal(retry.status, 201);
        assert.equal(retry.headers.get('idempotent-replayed'), 'true');
        assert.equal(((await retry.json()) as { emergencyId: string }).emergencyId, committedBeforeKill.emergencyId);
      }
      const before = acknowledged.size;
      await sleep(300 + Math.floor(Math.random() * 1200));
      const idempotencyKey = `before-kill-${k}`;
      const answered = await declare({ description: idempotencyKey }, { 'idempotency-key': idempotencyKey });
      assert.equal(answered.status, 201);
      committedBeforeKill = { idempotencyKey, emergencyId: ((await answered.json()) as { emergencyId: string }).emergencyId };
      acknowledged.add(committedBeforeKill.emergencyId);
      acknowledgedAt.set(committedBeforeKill.emergencyId, Date.now());
      keyed.set(idempotencyKey, new Set([committedBeforeKill.emergencyId]));
      const killedAt = Date.now();
      await kill(server);
      kills.push({ at: killedAt, healthyAt: Number.NaN, claimed: await claimedDeliveries() });
      perKill.push(acknowledged.size - before);
    }
    server = await startService();
    kills[KILLS - 1]!.healthyAt = Date.now();
    await sleep(500);
    stop = true;
    await Promise.all(writers);
    assert.ok(acknowledged.size >= KILLS * 5, `enough declares were acknowledged (${acknowledged.size}, per kill ${perKill})`);

    // Every acknowledged emergency reads back.
    const found = new Set<string>();
    const byDescription = new Map<string, string[]>();
    let cursor: string | null = null;
    do {
      const res = await fetch(`http://127.0.0.1:${port}/api/public/v1/orgs/${orgId}/emergencies?limit=200${cursor ? `&cursor=${cursor}` : ''}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      const page = (await res.json()) as { items: { emergencyId: string; description: string | null }[]; nextCursor: string | null };
      for (const e of page.items) {
        found.add(e.emergencyId);
        if (e.description) byDescription.set(e.description, [...(byDescription.get(e.description) ?? []), e.emergencyId]);
      }
      cursor = page.nextCursor;
    } while (cursor);
    const missing = [...acknowledged].filter((id) => !found.has(id));
    assert.deepEqual(missing, [], `acknowledged but missing after restarts (of ${acknowledged.size})`);

    // Each Idempotency-Key wrote exactly one emergency, the one every answer for it named.
    assert.ok(keyed.size >= KILLS, `keyed writes were answered (${keyed.size})`);
    const twice = [...keyed].filter(([k, ids]) => ids.size !== 1 || (byDescription.get(k) ?? []).length !== 1 || byDescription.get(k)![0] !== [...ids][0]);
    assert.deepEqual(twice, [], 'an Idempotency-Key declared more than once, or answered with another emergency');

    // Every acknowledged emergency's declared event reaches the subscriber, signed.
    const delivered = () => {
      const ids = new Set<string>();
      for (const req of receiver.forPath('/hook')) {
        const envelope = verify(secret, req);
        if (envelope.eventType === 'emergency.declared') ids.add(envelope.emergencyId);
      }
      return ids;
    };
    const deadline = Date.now() + 120_000;
    let undelivered = [...acknowledged];
    while (Date.now() < deadline) {
      const ids = delivered();
      undelivered = [...acknowledged].filter((id) => !ids.has(id));
      if (undelivered.length === 0) break;
      await sleep(500);
    }
    assert.deepEqual(undelivered, [], `acknowledged declares without a delivered webhook (of ${acknowledged.size}; ${attempts} attempts)`);

    // The deliveries the killed server had claimed (leased to its worker) and not finished: its worker
    // died with them, so each must be attempted again after the kill, and soon after the restart, as the
    // dead worker's claims are taken over, long before its lease (2 x WEBHOOK_TIMEOUT_SECONDS + 15 s =
    // 19 s here) would have expired. (A claimed delivery is usually already at the receiver when the
    // server dies, which then answers a dead connection: its first arrival comes before the kill, so the
    // attempt that counts is the first one after it.)
    const arrivals = new Map<string, number[]>();
    for (const req of receiver.forPath('/hook')) {
      const envelope = verify(secret, req);
      if (envelope.eventType !== 'emergency.declared') continue;
      const times = arrivals.get(envelope.emergencyId);
      if (times) times.push(req.receivedAt);
      else arrivals.set(envelope.emergencyId, [req.receivedAt]);
    }
    const afterRestart: number[] = [];
    const notAttemptedAgain: string[] = [];
    for (const k of kills) {
      for (const id of k.claimed) {
        const next = Math.min(...(arrivals.get(id) ?? []).filter((at) => at > k.at));
        if (next === Infinity) notAttemptedAgain.push(id);
        else afterRestart.push(Math.max(0, next - k.healthyAt));
      }
    }
    afterRestart.sort((a, b) => a - b);
    const p50 = afterRestart[Math.floor(afterRestart.length / 2)] ?? 0;
    const max = afterRestart.at(-1) ?? 0;
    console.log(`# claimed by a killed server: ${afterRestart.length}; next attempt after the restart answered, ms: p50 ${p50}, max ${max}`);
    assert.deepEqual(notAttemptedAgain, [], 'deliveries claimed by a killed server and never attempted again');
    assert.ok(afterRestart.length >= KILLS, `deliveries were claimed at the kills (${afterRestart.length})`);
    assert.ok(max < 9_500, `a delivery waited ${max} ms after the restart: the dead worker's claims were not taken over`);
  });
});
