import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { EventLog, type LogSink, type StoredEvent } from '../../src/log/follow.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, TEST_ENV } from '../helpers/server.js';

/** A follower of the kind the device gateway and the event streams are: it keeps what it is handed. */
class Recorder implements LogSink {
  readonly taken: { offset: number; eventType: string; live: boolean }[] = [];
  backedUp = false;
  private release: (() => void) | undefined;

  take(event: StoredEvent, live: boolean): boolean {
    this.taken.push({ offset: event.offset, eventType: (JSON.parse(event.payload) as { eventType: string }).eventType, live });
    return true;
  }

  drained(): Promise<void> {
    return new Promise((resolve) => {
      this.release = resolve;
    });
  }

  /** Lets a paused replay go on. */
  resume(): void {
    this.backedUp = false;
    this.release?.();
  }

  async until(count: number): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (this.taken.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(this.taken.length, count, `the follower got ${this.taken.length} of ${count} events`);
  }
}

const offsets = (r: Recorder) => r.taken.map((t) => t.offset);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('following the event log', () => {
  const database = freshDatabaseUrl();
  const config = loadConfig({ ...TEST_ENV, DATABASE_URL: database.url });
  let server: RunningServer | undefined;
  after(async () => {
    await server?.stop();
    await database.drop();
  });

  it('a new follower sees every event of its org once and in order, replayed then live, across a restart', async () => {
    server = await startServer(config);
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const declare = async () =>
      assert.equal((await client(`${server!.url}/api/public/v1`, key).post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire' })).status, 201);
    for (let i = 0; i < 3; i++) await declare();

    // The whole of a fifth follower: a sink, and one call.
    const follower = new Recorder();
    const following = server.ctx.eventLog.follow(org.orgId, 0, follower);
    await following.caughtUp;
    for (let i = 0; i < 2; i++) await declare();
    await follower.until(5);

    // The service stops; its successor on the same database picks up where the follower stood.
    following.close();
    await server.stop();
    server = await startServer(config);
    const resumed = server.ctx.eventLog.follow(org.orgId, following.position, follower);
    for (let i = 0; i < 2; i++) await declare();
    await resumed.caughtUp;
    await follower.until(7);

    assert.deepEqual(offsets(follower), range(1, 7));
    assert.ok(follower.taken.every((t) => t.eventType === 'emergency.declared'));
    assert.ok(follower.taken.some((t) => t.live) && follower.taken.some((t) => !t.live), 'both replayed and live events');
  });

  it('a follower that makes its replay wait misses nothing committed meanwhile, and another org is not mixed in', async () => {
    server ??= await startServer(config);
    const [org, other] = [await createOrgTree(server.ctx), await createOrgTree(server.ctx)];
    const api = client(`${server.url}/api/public/v1`, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    const otherApi = client(`${server.url}/api/public/v1`, (await mintKey(server.ctx, { subjectType: 'org', subjectId: other.orgId })).key);
    for (let i = 0; i < 4; i++) await api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire' });

    const live = new Recorder();
    await server.ctx.eventLog.follow(org.orgId, 4, live, { atEnd: true }).caughtUp;
    const slow = new Recorder();
    slow.backedUp = true;
    const following = server.ctx.eventLog.follow(org.orgId, 0, slow);
    // While the slow follower waits, events are committed in both orgs.
    for (let i = 0; i < 3; i++) {
      await api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire' });
      await otherApi.post(`/orgs/${other.orgId}/emergencies`, { categoryName: 'Fire' });
    }
    await live.until(3);
    assert.equal(slow.taken.length, 0);
    slow.resume();
    await following.caughtUp;
    await slow.until(7);
    assert.deepEqual(offsets(slow), range(1, 7));
    assert.deepEqual(offsets(live), range(5, 7));
    following.close();
  });
  it("a large org's fan-out goes on in turns: another org's follower is not queued behind it, and each gets every event in order", async () => {
    server ??= await startServer(config);
    const [large, small] = [await createOrgTree(server.ctx), await createOrgTree(server.ctx)];
    const log = new EventLog(server.ctx.db, { handOversPerTurn: 32 });
    const followers = Array.from({ length: 300 }, () => new Recorder());
    const lone = new Recorder();
    await Promise.all([
      ...followers.map((f) => log.follow(large.orgId, 0, f, { atEnd: true }).caughtUp),
      log.follow(small.orgId, 0, lone, { atEnd: true }).caughtUp,
    ]);
    // Joining reads the log once; the commits below continue from where that read stands.
    await new Promise((r) => setTimeout(r, 500));
    const handedOver: number[] = [];
    log.onHandedOver((orgId, row) => {
      if (orgId === large.orgId) handedOver.push(row.offset);
    });
    const event = (orgId: string, offset: number) => ({
      id: `event-${orgId}-${offset}`,
      org_id: orgId,
      emergency_id: 'e',
      event_type: 'emergency.declared',
      sequence: offset,
      payload: JSON.stringify({ eventType: 'emergency.declared', offset }),
      created_at: new Date().toISOString(),
    });
    // Two commits of the large org, then one of the small org, in one turn of the event loop (as one group commit ends).
    log.committed({ orgId: large.orgId, offset: 1, written: [event(large.orgId, 1)] });
    log.committed({ orgId: large.orgId, offset: 2, written: [event(large.orgId, 2)] });
    log.committed({ orgId: small.orgId, offset: 1, written: [event(small.orgId, 1)] });
    const reachedNow = followers.filter((f) => f.taken.length > 0).length;
    assert.deepEqual(offsets(lone), [1], 'the small org has its event in the same turn');
    assert.equal(reachedNow, 32, 'the large org has handed over one turn of its fan-out');

    for (const f of followers) await f.until(2);
    assert.ok(followers.every((f) => offsets(f).join() === '1,2' && f.taken.every((t) => t.live)));
    assert.deepEqual(handedOver, [1, 2]);
    log.close();
  });
});
