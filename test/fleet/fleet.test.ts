import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { createContext } from '../../src/create-context.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { createSubscription } from '../../src/domain/webhooks/service.js';
import { type Receiver, startReceiver, verify } from '../delivery/helpers.js';
import { refusedUpgrade } from '../devices/support.js';
import { BaseStation } from './base-station.js';
import { type ChildServer, spawnServer } from '../helpers/child-server.js';
import { freshDatabaseUrl, onPostgres } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, TEST_ENV } from '../helpers/server.js';

const DEVICES = 40;
const BURST = 30;
/** The gateway is killed once this many declarations of the burst have been answered; the rest follow it. */
const KILL_AFTER = 10;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const wsUrlOf = (server: ChildServer) => `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`;

describe('a fleet: 1 api, 2 gateway and 1 worker processes on one PostgreSQL database', {
  skip: onPostgres ? false : 'a fleet shares one PostgreSQL database: set DATABASE_URL=postgres://... (roles other than all refuse SQLite)',
}, () => {
  const database = freshDatabaseUrl();
  const env = { DATABASE_URL: database.url, HOST: '127.0.0.1', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', RATE_LIMIT_PER_KEY: '100000' };
  let api: ChildServer;
  const gateways: ChildServer[] = [];
  let worker: ChildServer;
  let ctx: AppContext;
  let receiver: Receiver;
  let secret = '';
  let orgId = '';
  let key = '';
  const devices: BaseStation[] = [];

  before(async () => {
    // The api process applies the migrations; the others start on the migrated schema.
    api = await spawnServer(env, ['--role', 'api']);
    [gateways[0], gateways[1], worker] = await Promise.all([
      spawnServer(env, ['--role', 'gateway']),
      spawnServer(env, ['--role', 'gateway']),
      spawnServer(env, ['--role', 'worker']),
    ]);
    ctx = createContext(loadConfig({ ...TEST_ENV, DATABASE_URL: database.url }));
    receiver = await startReceiver();
    const org = await createOrgTree(ctx);
    orgId = org.orgId;
    key = (await mintKey(ctx, { subjectType: 'org', subjectId: orgId })).key;
    secret = (await createSubscription(ctx, operatorCaller(), { subjectType: 'org', subjectId: orgId, url: `${receiver.url}/hook` })).secret;
    const urls = gateways.map(wsUrlOf);
    for (let i = 0; i < DEVICES; i++) {
      const { token } = await createDevice(ctx, operatorCaller(), orgId, { name: `Base station ${i}` });
      devices.push(new BaseStation(token, urls, i % urls.length));
    }
    await Promise.all(devices.map((device) => device.start()));
  });

  after(async () => {
    await Promise.all(devices.map((device) => device.stop()));
    await receiver?.close();
    for (const server of [api, ...gateways, worker]) await server?.kill();
    await ctx?.db.close();
    await database.drop();
  });

  it('serves on each process only what its role names', async () => {
    const device = await createDevice(ctx, operatorCaller(), orgId, { name: 'Probe' });
    // The api process holds no device sockets: the upgrade is an unknown route there, as on the worker.
    for (const server of [api, worker]) {
      const refused = await refusedUpgrade(wsUrlOf(server), { authorization: `Bearer ${device.token}` });
      assert.equal(refused.status, 404, `${server.url} refuses device upgrades`);
    }
    // A gateway serves no REST route, not even with a valid key; neither does the worker.
    for (const server of [gateways[0]!, worker]) {
      assert.equal((await client(`${server.url}/api/public/v1`, key).post(`/orgs/${orgId}/emergencies`, { description: 'x' })).status, 404);
      assert.equal((await client(`${server.url}/api/public/v1`, key).get(`/orgs/${orgId}/events`)).status, 404);
      assert.equal((await client(`${server.url}/api/admin/v1`).get('/orgs')).status, 404);
      assert.equal((await fetch(`${server.url}/mcp`, { method: 'POST' })).status, 404);
    }
    // The event stream is a gateway's, not the api's.
    const stream = `/api/public/v1/orgs/${orgId}/stream`;
    assert.equal((await client(api.url, key).get(stream)).status, 404);
    const abort = new AbortController();
    const res = await fetch(`${gateways[1]!.url}${stream}`, { headers: { authorization: `Bearer ${key}` }, signal: abort.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const first = await res.body!.getReader().read();
    assert.match(new TextDecoder().decode(first.value), /^: after \d+/);
    abort.abort();
    // Every role answers the health probes.
    for (const server of [api, ...gateways, worker]) assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  });

  it('delivers every event to every device and every webhook when a gateway dies mid-burst', async () => {
    const declare = client(`${api.url}/api/public/v1`, key);
    const [doomed, survivor] = gateways as [ChildServer, ChildServer];
    const doomedUrl = wsUrlOf(doomed);
    const survivorUrl = wsUrlOf(survivor);
    assert.equal(devices.filter((d) => d.connections[0] === doomedUrl).length, DEVICES / 2, 'half of the devices start on each gateway');

    let next = 0;
    let answered = 0;
    let killed: Promise<unknown> | undefined;
    // Three declarations in flight at a time; the one that completes the KILL_AFTER-th kills a gateway while
    // the others go on, and waits for its death before declaring again, so the rest of the burst follows it.
    await Promise.all(
      Array.from({ length: 3 }, async () => {
        while (next < BURST) {
          const i = next++;
          const res = await declare.post(`/orgs/${orgId}/emergencies`, { description: `burst ${i}` });
          assert.equal(res.status, 201);
          if (++answered === KILL_AFTER) {
            killed = doomed.kill();
            await killed;
          }
        }
      }),
    );
    assert.ok(killed, 'a gateway was killed during the burst');
    assert.notEqual(doomed.child.signalCode, null);

    const feed = await declare.get(`/orgs/${orgId}/events?limit=100`);
    assert.equal(feed.status, 200);
    const lastOffset: number = feed.body.lastOffset;
    assert.equal(feed.body.items.length, BURST);
    assert.equal(lastOffset, feed.body.items.at(-1).offset);
    const expected = feed.body.items.map((item: { offset: number }) => item.offset);

    const deadline = Date.now() + 60_000;
    while (devices.some((d) => d.lastHandled < lastOffset) && Date.now() < deadline) await sleep(100);
    for (const [i, device] of devices.entries()) {
      assert.deepEqual(
        device.handled.map((h) => h.offset),
        expected,
        `device ${i} handled every frame once, in order`,
      );
      assert.deepEqual(device.duplicates, [], `device ${i} got no frame again after acknowledging it`);
    }
    // The doomed gateway's devices finished on the survivor, after reconnecting with `after`.
    for (const device of devices.filter((d) => d.connections[0] === doomedUrl)) {
      assert.ok(device.connections.length >= 2, 'reconnected');
      assert.equal(device.connections.at(-1), survivorUrl);
      assert.equal(device.handled.at(-1)!.gateway, survivorUrl);
    }
    // The survivor's own devices never lost their connection.
    for (const device of devices.filter((d) => d.connections[0] === survivorUrl)) assert.deepEqual(device.connections, [survivorUrl]);

    // Every event reaches the webhook subscriber through the worker process (at least once; counted by eventId).
    const eventIds = new Set<string>(feed.body.items.map((item: { event: { eventId: string } }) => item.event.eventId));
    let delivered = new Set<string>();
    while (Date.now() < deadline) {
      delivered = new Set(receiver.forPath('/hook').map((req) => verify(secret, req).eventId as string));
      if (delivered.size >= eventIds.size) break;
      await sleep(100);
    }
    assert.deepEqual([...delivered].sort(), [...eventIds].sort());
  });
});
