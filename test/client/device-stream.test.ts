import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocketServer } from 'ws';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice, revokeDevice } from '../../src/domain/devices/service.js';
import { declareEmergency } from '../../src/domain/emergencies/service.js';
import {
  connectDevice,
  createClient,
  type DeviceStream,
  type DeviceStreamOptions,
  type DeviceStreamStatus,
  type EmergencyEvent,
  type PublicClient,
} from '../../clients/typescript/src/index.js';
import { waitFor } from '../delivery/helpers.js';
import { startDeviceServer } from '../devices/support.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** Gateway timings shortened for tests: acks written every 50 ms, revocations noticed within 100 ms, frequent pings. */
const DEVICES = { ackFlushMs: 50, revocationCheckMs: 100, pingIntervalMs: 200 };
const FAST_RECONNECT = { initialDelayMs: 50, maxDelayMs: 400 };

interface Recorder {
  events: { offset: number; event: EmergencyEvent }[];
  statuses: DeviceStreamStatus[];
  errors: { offset: number; error: unknown }[];
  options: Pick<DeviceStreamOptions, 'onEvent' | 'onStatus' | 'onError'>;
}

function recorder(onEvent?: (event: EmergencyEvent, offset: number) => void | Promise<void>): Recorder {
  const r: Recorder = {
    events: [],
    statuses: [],
    errors: [],
    options: {
      async onEvent(event, { offset }) {
        await onEvent?.(event, offset);
        r.events.push({ offset, event });
      },
      onStatus: (status) => r.statuses.push(status),
      onError: (error, { offset }) => r.errors.push({ offset, error }),
    },
  };
  return r;
}

async function declare(api: PublicClient, orgId: string, description: string): Promise<string> {
  const res = await api.POST('/orgs/{org_id}/emergencies', { params: { path: { org_id: orgId } }, body: { description } });
  assert.equal(res.response.status, 201, JSON.stringify(res.error));
  return res.data!.emergencyId;
}

async function ackedOffset(api: PublicClient, orgId: string, deviceId: string): Promise<number | undefined> {
  const res = await api.GET('/orgs/{org_id}/devices', { params: { path: { org_id: orgId } } });
  assert.equal(res.response.status, 200, JSON.stringify(res.error));
  return res.data!.items.find((d) => d.deviceId === deviceId)?.ackedOffset;
}

/**
 * A second server on the same database and address. The port is free once the first server stopped,
 * unless a client socket happened to take it meanwhile: wait for it to be free (a failed start would
 * leave the server's background work running).
 */
async function restartOn(port: number, databaseUrl: string): Promise<Awaited<ReturnType<typeof startDeviceServer>>> {
  for (let attempt = 1; ; attempt++) {
    const probe = createServer();
    const free = await new Promise<boolean>((resolve) => {
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (free) {
      await new Promise<void>((resolve) => probe.close(() => resolve()));
      return startDeviceServer({ databaseUrl, port, devices: DEVICES });
    }
    if (attempt === 50) throw new Error(`port ${port} stayed in use`);
    await sleep(100);
  }
}

const connectedCount = (r: Recorder) => r.statuses.filter((s) => s.type === 'connected').length;

describe('TypeScript client: device stream', () => {
  let server: TestServer;
  let org: OrgFixture;
  let api: PublicClient;
  before(async () => {
    server = await startTestServer({}, { devices: DEVICES });
    org = await createOrgTree(server.ctx);
    api = createClient({ baseUrl: server.url, apiKey: (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key });
  });
  after(() => server.close());

  it('receives a declared event, acknowledges it only after the handler returned, and answers pings', async () => {
    const device = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'lobby' });
    let ackedWhileHandling: number | undefined;
    const r = recorder(async (_event, offset) => {
      if (offset !== 1) return;
      // Several ack flushes pass while the handler runs: nothing may be acknowledged yet.
      await sleep(250);
      ackedWhileHandling = await ackedOffset(api, org.orgId, device.id);
    });
    const stream = connectDevice({ baseUrl: server.url, token: device.token, reconnect: FAST_RECONNECT, ...r.options });
    try {
      await waitFor('connected', () => stream.connected);
      assert.deepEqual(r.statuses[0], { type: 'connected', after: undefined, url: `${server.url.replace(/^http/, 'ws')}/devices/v1/stream` });
      const emergencyId = await declare(api, org.orgId, 'smoke in the lobby');
      await waitFor('the event handled', () => r.events.length === 1);
      const [{ offset, event }] = r.events as [Recorder['events'][number]];
      assert.equal(offset, 1);
      assert.equal(event.eventType, 'emergency.declared');
      assert.equal(event.emergencyId, emergencyId);
      assert.equal(event.data.emergency.description, 'smoke in the lobby');
      assert.equal(stream.lastOffset, 1);
      assert.equal(ackedWhileHandling, 0, 'not acknowledged before the handler returned');
      await waitFor('ackedOffset 1', async () => (await ackedOffset(api, org.orgId, device.id)) === 1);
      // Pings every 200 ms: the connection stays up across several of them.
      await sleep(700);
      assert.equal(connectedCount(r), 1);
      assert.ok(stream.connected);
      assert.deepEqual(r.errors, []);
    } finally {
      await stream.close();
    }
    assert.deepEqual(await stream.done, { reason: 'closed' });
    assert.deepEqual(r.statuses.at(-1), { type: 'stopped', end: { reason: 'closed' } });
  });

  it('replays from `after`, and delivers again an event whose handler failed', async () => {
    const device = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'replay' });
    const first = await declare(api, org.orgId, 'first');
    const second = await declare(api, org.orgId, 'second');
    let failures = 0;
    const r = recorder((event) => {
      if (event.emergencyId === second && failures++ === 0) throw new Error('display busy');
    });
    // `after: 0` replays everything the org has; the first test declared offset 1.
    const stream = connectDevice({ baseUrl: server.url, token: device.token, after: 0, reconnect: FAST_RECONNECT, ...r.options });
    try {
      await waitFor('three events handled', () => r.events.length === 3);
      assert.deepEqual(
        r.events.map((e) => e.offset),
        [1, 2, 3],
      );
      assert.deepEqual(
        r.events.slice(1).map((e) => e.event.emergencyId),
        [first, second],
      );
      assert.equal(r.errors.length, 1);
      assert.equal(r.errors[0]!.offset, 3);
      assert.equal((r.errors[0]!.error as Error).message, 'display busy');
      // The failure dropped the connection; the next one resumed after the last handled offset.
      assert.ok(r.statuses.some((s) => s.type === 'connected' && s.after === 2));
      await waitFor('ackedOffset 3', async () => (await ackedOffset(api, org.orgId, device.id)) === 3);
    } finally {
      await stream.close();
    }
  });

  it('stops when the device is revoked (4401)', async () => {
    const device = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'revoked' });
    const r = recorder();
    const stream = connectDevice({ baseUrl: server.url, token: device.token, reconnect: FAST_RECONNECT, ...r.options });
    await waitFor('connected', () => stream.connected);
    await revokeDevice(server.ctx, operatorCaller(), device.id);
    assert.deepEqual(await stream.done, { reason: 'revoked' });
    assert.equal(stream.connected, false);
    await sleep(300);
    assert.equal(connectedCount(r), 1, 'no reconnect after a revocation');
  });

  it('stops when the token is refused at the upgrade (401)', async () => {
    const r = recorder();
    const stream = connectDevice({ baseUrl: server.url, token: `enk_dev_00000000${'0'.repeat(64)}`, reconnect: FAST_RECONNECT, ...r.options });
    assert.deepEqual(await stream.done, { reason: 'unauthorized', status: 401 });
    assert.equal(connectedCount(r), 0);
  });
});

describe('TypeScript client: device stream across a server restart', () => {
  let first: TestServer;
  after(() => first?.close());

  it('reconnects with after and receives the events declared meanwhile, without duplicates', async () => {
    first = await startTestServer({}, { devices: DEVICES });
    const port = Number(new URL(first.url).port);
    const org = await createOrgTree(first.ctx);
    const apiKey = (await mintKey(first.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    const api = createClient({ baseUrl: first.url, apiKey });
    const device = await createDevice(first.ctx, operatorCaller(), org.orgId, { name: 'restart' });
    const r = recorder();
    let stream: DeviceStream | undefined;
    let second: Awaited<ReturnType<typeof startDeviceServer>> | undefined;
    try {
      stream = connectDevice({ baseUrl: first.url, token: device.token, reconnect: FAST_RECONNECT, ...r.options });
      await waitFor('connected', () => stream!.connected);
      const before = await declare(api, org.orgId, 'before the restart');
      await waitFor('the first event', () => r.events.length === 1);
      await waitFor('ackedOffset 1', async () => (await ackedOffset(api, org.orgId, device.id)) === 1);

      // The server goes away (1001) and the device keeps retrying; two emergencies are declared meanwhile.
      await first.stop();
      await waitFor('the disconnect', () => r.statuses.some((s) => s.type === 'disconnected'));
      const disconnected = r.statuses.find((s): s is Extract<DeviceStreamStatus, { type: 'disconnected' }> => s.type === 'disconnected')!;
      assert.equal(disconnected.code, 1001);
      const elsewhere = createContext(loadConfig({ DATABASE_URL: first.databaseUrl, LOG_LEVEL: 'silent' }));
      const meanwhile: string[] = [];
      try {
        for (const description of ['during the restart 1', 'during the restart 2']) {
          meanwhile.push((await declareEmergency(elsewhere, operatorCaller(), org.orgId, { description })).emergencyId);
        }
      } finally {
        await elsewhere.db.close();
      }
      await sleep(200); // a few refused reconnects
      assert.equal(r.events.length, 1);

      // The same address comes back with the same database.
      second = await restartOn(port, first.databaseUrl);
      await waitFor('the events declared meanwhile', () => r.events.length >= 3, 10_000);
      assert.ok(r.statuses.some((s) => s.type === 'connected' && s.after === 1));
      const live = await declare(createClient({ baseUrl: second.url, apiKey }), org.orgId, 'after the restart');
      await waitFor('the live event', () => r.events.length >= 4);
      await sleep(100);
      assert.deepEqual(
        r.events.map((e) => e.offset),
        [1, 2, 3, 4],
      );
      assert.deepEqual(
        r.events.map((e) => e.event.emergencyId),
        [before, ...meanwhile, live],
      );
      assert.equal(new Set(r.events.map((e) => e.event.eventId)).size, 4, 'no event handed over twice');
      const api2 = createClient({ baseUrl: second.url, apiKey });
      await waitFor('ackedOffset 4', async () => (await ackedOffset(api2, org.orgId, device.id)) === 4);
    } finally {
      await stream?.close();
      await second?.close();
    }
  });
});

describe('TypeScript client: device stream over several gateways', () => {
  it('moves to the next gateway when its gateway goes away, and catches up there with after', async () => {
    const database = freshDatabaseUrl();
    const a = await startDeviceServer({ databaseUrl: database.url, devices: DEVICES });
    const b = await startDeviceServer({ databaseUrl: database.url, devices: DEVICES });
    const streamUrl = (server: { url: string }) => `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`;
    const r = recorder();
    let stream: DeviceStream | undefined;
    try {
      const org = await createOrgTree(b.ctx);
      const apiKey = (await mintKey(b.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
      const api = createClient({ baseUrl: b.url, apiKey });
      const device = await createDevice(b.ctx, operatorCaller(), org.orgId, { name: 'roaming' });
      stream = connectDevice({ baseUrl: [a.url, b.url], token: device.token, reconnect: FAST_RECONNECT, ...r.options });
      await waitFor('connected', () => stream!.connected);
      assert.deepEqual(r.statuses[0], { type: 'connected', after: undefined, url: streamUrl(a) });
      await declare(api, org.orgId, 'before the gateway goes away');
      await waitFor('the first event', () => r.events.length === 1);

      // The first gateway goes away for good; the org declares meanwhile.
      await a.stop();
      await declare(api, org.orgId, 'while the device moves');
      await waitFor('the event declared meanwhile', () => r.events.length === 2, 10_000);
      assert.ok(r.statuses.some((s) => s.type === 'connected' && s.after === 1 && s.url === streamUrl(b)));
      await declare(api, org.orgId, 'live on the second gateway');
      await waitFor('the live event', () => r.events.length === 3);
      assert.deepEqual(
        r.events.map((e) => e.offset),
        [1, 2, 3],
      );
      assert.equal(new Set(r.events.map((e) => e.event.eventId)).size, 3, 'no event handed over twice');
    } finally {
      await stream?.close();
      await b.stop();
      await database.drop();
    }
  });
});

describe('TypeScript client: device stream protocol details (scripted server)', () => {
  it('waits a random share of a doubling ceiling between reconnects (full jitter)', async () => {
    // A port nobody listens on: every attempt fails at once and is retried.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const r = recorder();
    const stream = connectDevice({
      baseUrl: `http://127.0.0.1:${port}`,
      token: 'enk_dev_test',
      reconnect: { initialDelayMs: 40, maxDelayMs: 160 },
      ...r.options,
    });
    const waits = () => r.statuses.flatMap((s) => (s.type === 'disconnected' ? [s.retryInMs] : []));
    try {
      await waitFor('eight failed attempts', () => waits().length >= 8, 10_000);
    } finally {
      await stream.close();
    }
    const ceilings = [40, 80, 160, 160, 160, 160, 160, 160];
    for (const [i, wait] of waits().slice(0, 8).entries()) {
      assert.ok(wait >= 0 && wait <= ceilings[i]!, `wait ${i} (${wait} ms) within 0..${ceilings[i]} ms`);
    }
    // Drawn from the whole interval, not bunched just under the ceiling.
    assert.ok(
      waits().some((wait, i) => i < 8 && wait < 0.8 * ceilings[i]!),
      `waits ${waits().join(', ')}`,
    );
  });

  it('answers {"type":"ping"} with a pong, skips offsets it already handled, and acks `after` and each handled offset', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await once(wss, 'listening');
    const received: unknown[] = [];
    const upgrades: { url: string; authorization: string | undefined }[] = [];
    wss.on('connection', (ws, req) => {
      upgrades.push({ url: req.url ?? '', authorization: req.headers.authorization });
      ws.on('message', (data) => received.push(JSON.parse(data.toString())));
      const event = (offset: number) => JSON.stringify({ type: 'event', offset, event: { eventId: `e${offset}`, eventType: 'emergency.declared' } });
      ws.send('{"type":"ping"}');
      ws.send(event(5));
      ws.send(event(6));
      ws.send(event(6)); // a duplicate: not handed over again
      ws.send('{"type":"something-newer"}'); // unknown frames are ignored
      ws.send(event(7));
    });
    const { port } = wss.address() as AddressInfo;
    const r = recorder();
    const stream = connectDevice({ baseUrl: `http://127.0.0.1:${port}`, token: 'enk_dev_test', after: 4, ...r.options });
    try {
      await waitFor('three events', () => r.events.length === 3);
      await waitFor('pong and four acks', () => received.length >= 5);
      assert.deepEqual(
        r.events.map((e) => e.offset),
        [5, 6, 7],
      );
      assert.deepEqual(upgrades, [{ url: '/devices/v1/stream?after=4', authorization: 'Bearer enk_dev_test' }]);
      // On connecting it confirms `after` (what it had processed before), then acks as it goes.
      assert.deepEqual(received, [
        { type: 'ack', offset: 4 },
        { type: 'pong' },
        { type: 'ack', offset: 5 },
        { type: 'ack', offset: 6 },
        { type: 'ack', offset: 7 },
      ]);
    } finally {
      await stream.close();
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    }
  });

  it('can be closed from its own handler', async () => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await once(wss, 'listening');
    wss.on('connection', (ws) => {
      for (const offset of [1, 2]) ws.send(JSON.stringify({ type: 'event', offset, event: { eventId: `e${offset}`, eventType: 'emergency.declared' } }));
    });
    const { port } = wss.address() as AddressInfo;
    const handled: number[] = [];
    const stream: DeviceStream = connectDevice({
      baseUrl: `ws://127.0.0.1:${port}/devices/v1/stream`,
      token: 'enk_dev_test',
      onEvent: async (_event, { offset }) => {
        handled.push(offset);
        await stream.close();
      },
    });
    try {
      assert.deepEqual(await stream.done, { reason: 'closed' });
      await stream.close();
      assert.deepEqual(handled, [1]);
      assert.equal(stream.lastOffset, 1);
      assert.equal(stream.connected, false);
    } finally {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    }
  });
});
