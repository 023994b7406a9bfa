import assert from 'node:assert/strict';
import { type AddressInfo, createServer, type Server, type Socket, connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { FollowEventsError, type FollowedEvent, followEvents } from '../../clients/typescript/src/index.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** A TCP proxy in front of the server whose open connections a test can cut, as a load balancer or a network would. */
async function cuttableProxy(target: URL): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = connect(Number(target.port), target.hostname);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** The client's `followEvents`: an organization's events over SSE with an API key, resumed after any cut with no gap and no duplicate. */
describe('client: followEvents', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['read', 'write'] })).key;
  });
  after(() => server?.close());

  it('hands out every event in offset order, and resumes after a cut connection without a gap or a duplicate', async () => {
    const proxy = await cuttableProxy(new URL(server.url));
    const api = client(server.base, key);
    const declare = (description: string) => api.post(`/orgs/${org.orgId}/emergencies`, { description });
    await declare('before following');
    const abort = new AbortController();
    const seen: FollowedEvent[] = [];
    const following = (async () => {
      for await (const item of followEvents(org.orgId, {
        baseUrl: proxy.url,
        apiKey: key,
        after: 0,
        signal: abort.signal,
        reconnect: { initialDelayMs: 50 },
      })) {
        seen.push(item);
      }
    })();
    const until = async (count: number) => {
      for (let i = 0; i < 100 && seen.length < count; i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(seen.length >= count, `${seen.length} of ${count} events`);
    };
    await until(1);
    await declare('while following');
    await until(2);
    // The connection is cut; events committed meanwhile come after the reconnect.
    proxy.cut();
    await declare('while cut, 1');
    await declare('while cut, 2');
    await until(4);
    proxy.cut();
    await declare('after a second cut');
    await until(5);
    abort.abort();
    await following;
    await proxy.close();

    assert.deepEqual(
      seen.map((s) => s.offset),
      [1, 2, 3, 4, 5],
    );
    assert.deepEqual(
      seen.map((s) => (s.event.eventType === 'emergency.declared' ? s.event.data.emergency.description : null)),
      ['before following', 'while following', 'while cut, 1', 'while cut, 2', 'after a second cut'],
    );
    assert.ok(seen.every((s) => s.event.orgId === org.orgId));
  });

  it('stops with a FollowEventsError when the key is refused, and ends quietly when aborted', async () => {
    const refused = followEvents(org.orgId, { baseUrl: server.url, apiKey: `enk_live_0000aaaa${'0'.repeat(64)}` });
    await assert.rejects(refused.next(), (err: unknown) => err instanceof FollowEventsError && err.status === 401);
    const noReader = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['emergencies:read'] })).key;
    await assert.rejects(
      followEvents(org.orgId, { baseUrl: server.url, apiKey: noReader }).next(),
      (err: unknown) => err instanceof FollowEventsError && err.status === 403,
    );
    const abort = new AbortController();
    const iterator = followEvents(org.orgId, { baseUrl: server.url, apiKey: key, signal: abort.signal });
    const next = iterator.next();
    setTimeout(() => abort.abort(), 200);
    assert.deepEqual(await next, { value: undefined, done: true });
  });
});
