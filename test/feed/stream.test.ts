import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pruneExpiredEvents } from '../../src/log/retention.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

interface SseEvent {
  id: number;
  event: string;
  data: any;
  raw: string;
}

/** A browser-style watcher: fetch with the Authorization header, the body read as a stream of SSE blocks. */
class Watcher {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  ended = false;
  private constructor(
    readonly response: Response,
    private readonly controller: AbortController,
  ) {}

  static async open(url: string, key: string | undefined, headers: Record<string, string> = {}): Promise<Watcher> {
    const controller = new AbortController();
    const response = await fetch(url, { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers }, signal: controller.signal });
    const w = new Watcher(response, controller);
    if (response.ok) void w.read();
    return w;
  }

  private async read() {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of this.response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith(':')) {
            this.comments.push(block.slice(1).trim());
            continue;
          }
          const field = (name: string) => [...block.matchAll(/^([a-z]+): (.*)$/gm)].find((m) => m[1] === name)?.[2];
          const data = field('data')!;
          this.events.push({ id: Number(field('id')), event: field('event')!, data: JSON.parse(data), raw: data });
        }
      }
    } catch {
      /* aborted */
    }
    this.ended = true;
  }

  async until(predicate: () => boolean, what: string, timeoutMs = 5_000) {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (have ${this.events.length} events)`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  close() {
    this.controller.abort();
  }
}

describe('GET /orgs/{org_id}/stream (Server-Sent Events)', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  let api: ReturnType<typeof client>;
  const url = () => `${server.base}/orgs/${org.orgId}/stream`;
  const watchers: Watcher[] = [];
  const open = async (...args: Parameters<typeof Watcher.open>) => {
    const w = await Watcher.open(...args);
    watchers.push(w);
    return w;
  };

  before(async () => {
    // One key watches with up to 22 streams at once below (the limits have a suite of their own: stream-limits).
    server = await startTestServer({ STREAMS_PER_KEY: '50' }, { dispatcher: false });
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['read', 'write'] })).key;
    api = client(server.base, key);
  });
  after(async () => {
    for (const w of watchers) w.close();
    await server.close();
  });

  it('streams each committed event with its offset, type and the envelope the feed returns', async () => {
    const w = await open(url(), key);
    assert.equal(w.response.status, 200);
    assert.match(w.response.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.ok(w.response.headers.get('x-request-id'));
    const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'live' });
    await api.patch(`/orgs/${org.orgId}/emergencies/${declared.body.emergencyId}`, { categoryName: 'Fire' });
    await w.until(() => w.events.length === 2, 'two events');
    const feed = await api.get(`/orgs/${org.orgId}/events`);
    assert.deepEqual(
      w.events.map((e) => [e.id, e.event, e.data]),
      feed.body.items.map((i: { offset: number; event: { eventType: string } }) => [i.offset, i.event.eventType, i.event]),
    );
    assert.equal(w.events[1]!.data.data.emergency.status, 'categorized');
  });

  it('resumes after an offset, or from Last-Event-ID, with no gap and no duplicate, then goes live', async () => {
    const first = await open(`${url()}?after=0`, key);
    await first.until(() => first.events.length === 2, 'the replay');
    first.close();
    await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'while away' });
    const resumed = await open(url(), key, { 'last-event-id': String(first.events[1]!.id) });
    await resumed.until(() => resumed.events.length === 1, 'the missed event');
    await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'after the resume' });
    await resumed.until(() => resumed.events.length === 2, 'the live event');
    assert.deepEqual(
      resumed.events.map((e) => e.id),
      [3, 4],
    );
    // Many watchers of one org, one joining mid-stream: each gets every offset once, in order.
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => open(`${url()}?after=${i % 4}`, key)));
    for (let i = 0; i < 5; i++) await api.post(`/orgs/${org.orgId}/emergencies`, { description: `burst ${i}` });
    for (const [i, w] of many.entries()) {
      await w.until(() => w.events.length === 9 - (i % 4), `watcher ${i}`);
      assert.deepEqual(
        w.events.map((e) => e.id),
        Array.from({ length: 9 - (i % 4) }, (_, k) => k + 1 + (i % 4)),
      );
    }
  });

  it('refuses a missing key (401), another org (403), a bad after (422) and an expired one (410)', async () => {
    assert.equal((await Watcher.open(url(), undefined)).response.status, 401);
    const other = await createOrgTree(server.ctx);
    assert.equal((await Watcher.open(`${server.base}/orgs/${other.orgId}/stream`, key)).response.status, 403);
    assert.equal((await Watcher.open(`${url()}?after=-1`, key)).response.status, 422);
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await server.ctx.db.db.updateTable('events').set({ created_at: old }).where('org_id', '=', org.orgId).where('stream_offset', '<=', 2).execute();
    await pruneExpiredEvents(server.ctx.db, 30);
    const expired = await Watcher.open(`${url()}?after=1`, key);
    assert.equal(expired.response.status, 410);
    assert.equal((await expired.response.json()).detail.oldestOffset, 3);
  });
});
