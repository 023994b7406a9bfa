import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Command, IPv4Address, IPv4ProxyAddress, TransportProtocol, V2ProxyProtocol } from 'proxy-protocol-js';
import WebSocket from 'ws';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { AlertPathProbe, abuseLoop, assertFairShare } from '../helpers/alert-path.js';
import { type ChildServer, spawnServer } from '../helpers/child-server.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

const hex = (length: number) => [...Array(length)].map(() => Math.floor(Math.random() * 16).toString(16)).join('');
const madeUpKey = () => `enk_live_${hex(72)}`;

/** A GET with a bearer key and extra headers, sent from `from`; resolves with the status. */
function get(url: string, key: string, headers: Record<string, string> = {}, from = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress: from, headers: { authorization: `Bearer ${key}`, ...headers }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A device upgrade with extra headers; resolves with 101 when the WebSocket opened, the refusal's status otherwise. */
function upgrade(wsUrl: string, token: string, headers: Record<string, string>): Promise<number> {
  const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}`, ...headers } });
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    ws.once('error', reject);
  });
}

/** Raw HTTP after `preface` on one connection; resolves with the response's status, or 0 when the server closed it unanswered. */
function rawGet(port: number, preface: Buffer | string, path: string, key?: string): Promise<number> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let received = '';
    socket.on('connect', () => {
      socket.write(preface);
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${key ? `Authorization: Bearer ${key}\r\n` : ''}\r\n`);
    });
    socket.on('data', (chunk) => {
      received += chunk.toString();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0)));
  });
}

const v1 = (client: string) => `PROXY TCP4 ${client} 127.0.0.1 40000 443\r\n`;
const v2 = (client: [number, number, number, number]) =>
  Buffer.from(
    new V2ProxyProtocol(
      Command.PROXY,
      TransportProtocol.STREAM,
      new IPv4ProxyAddress(IPv4Address.createFrom(client), 40000, IPv4Address.createFrom([127, 0, 0, 1]), 443),
    ).build(),
  );

/**
 * Extensions §13, trusted proxies: with TRUST_PROXY the client address comes from X-Forwarded-For/Forwarded of a trusted peer
 * (and never from an untrusted one), the PROXY protocol names it when enabled, and failed authentication is throttled per
 * (client address, credential id), so a flood of bad tokens locks out neither a valid key nor a device seen for the first time.
 */
describe('fair share: trusted proxies and failed-authentication throttling', () => {
  let server: TestServer;
  let org: OrgFixture;
  let emergencies: string;
  /** A key and a device stored before any flood, never used: this process reads them for the first time behind the flood. */
  let unreadKey: string;
  let unseenDevice: string;

  before(async () => {
    // Loopback's 127.0.0.1 is the proxy; 127.0.0.2 is a client that connects directly. One failure a second, a burst of five.
    server = await startTestServer({ TRUST_PROXY: '127.0.0.1', AUTH_FAILURES_PER_ADDRESS: '1' }, { dispatcher: false, deadlines: false });
    org = await createOrgTree(server.ctx);
    emergencies = `${server.base}/orgs/${org.orgId}/emergencies`;
    unreadKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    unseenDevice = (await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Behind the NAT' })).token;
  });
  after(() => server.close());

  it('throttles the client X-Forwarded-For or Forwarded names, not the proxy, and keeps the other tenant within bound', async () => {
    const probe = await AlertPathProbe.open(server);
    const quiet = await probe.measure(20);
    const flood = abuseLoop(() => get(emergencies, madeUpKey(), { 'x-forwarded-for': '198.51.100.1, 203.0.113.7' }), 4);
    try {
      const abused = await probe.measureDuring(flood, 20);
      assertFairShare(quiet, abused, 'a flood of bad keys through the proxy');
    } finally {
      await flood.stop();
    }
    assert.equal(await get(emergencies, madeUpKey(), { 'x-forwarded-for': '203.0.113.7' }), 429);
    // Another client behind the same proxy is not throttled, by either header.
    assert.equal(await get(emergencies, madeUpKey(), { 'x-forwarded-for': '203.0.113.8' }), 401);
    assert.equal(await get(emergencies, madeUpKey(), { forwarded: 'for=203.0.113.7;proto=https' }), 429);
    assert.equal(await get(emergencies, madeUpKey(), { forwarded: 'for="[2001:db8::1]:4711"' }), 401);
    await probe.close();
  });

  it('ignores the headers of a peer it does not trust', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push(await get(emergencies, madeUpKey(), { 'x-forwarded-for': `192.0.2.${i}` }, '127.0.0.2'));
    assert.equal(statuses.at(-1), 429, statuses.join(','));
  });

  it('lets a valid key never read before and a device seen for the first time in from a flooding address', async () => {
    const nat = { 'x-forwarded-for': '203.0.113.50' };
    for (let i = 0; i < 30; i++) await get(emergencies, madeUpKey(), nat);
    assert.equal(await get(emergencies, madeUpKey(), nat), 429);
    assert.equal(await upgrade(`${server.url.replace(/^http/, 'ws')}/devices/v1/stream`, `enk_dev_${hex(72)}`, nat), 429);
    assert.equal(await get(emergencies, unreadKey, nat), 200);
    assert.equal(await upgrade(`${server.url.replace(/^http/, 'ws')}/devices/v1/stream`, unseenDevice, nat), 101);
  });
});

describe('fair share: the PROXY protocol', () => {
  let server: TestServer;
  let port: number;
  let path: string;

  before(async () => {
    server = await startTestServer({ PROXY_PROTOCOL: 'true', AUTH_FAILURES_PER_ADDRESS: '1' }, { dispatcher: false, deadlines: false });
    const org = await createOrgTree(server.ctx);
    port = Number(new URL(server.url).port);
    path = `${new URL(server.base).pathname}/orgs/${org.orgId}/emergencies`;
  });
  after(() => server.close());

  it('takes the client address from a v1 or v2 header and closes connections without one', async () => {
    assert.equal(await rawGet(port, v1('192.0.2.10'), '/healthz'), 200);
    assert.equal(await rawGet(port, v2([192, 0, 2, 11]), '/healthz'), 200);
    assert.equal(await rawGet(port, '', '/healthz'), 0);
    assert.equal(await rawGet(port, 'PROXY TCP4 not-an-address 127.0.0.1 1 2\r\n', '/healthz'), 0);

    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push(await rawGet(port, v1('192.0.2.10'), path, madeUpKey()));
    assert.equal(statuses.at(-1), 429, statuses.join(','));
    assert.equal(await rawGet(port, v2([192, 0, 2, 10]), path, madeUpKey()), 429);
    // Another client of the same proxy, named by either version.
    assert.equal(await rawGet(port, v2([192, 0, 2, 11]), path, madeUpKey()), 401);
    assert.equal(await rawGet(port, v1('192.0.2.12'), path, madeUpKey()), 401);
  });
});

describe('the PROXY protocol in the logs', () => {
  const database = freshDatabaseUrl();
  let server: ChildServer;
  before(async () => {
    server = await spawnServer({ DATABASE_URL: database.url, PROXY_PROTOCOL: 'true', LOG_FORMAT: 'json' });
  });
  after(async () => {
    await server.kill();
    await database.drop();
  });

  it('log lines name the client the PROXY header gave, not the proxy', async () => {
    const port = Number(new URL(server.url).port);
    assert.equal(await rawGet(port, v1('192.0.2.77'), '/api/public/v1/orgs/none/emergencies', madeUpKey()), 401);
    await new Promise((r) => setTimeout(r, 300));
    const incoming = server.lines.filter((l) => l.req?.url === '/api/public/v1/orgs/none/emergencies');
    assert.ok(incoming.length > 0, JSON.stringify(server.lines.slice(-5)));
    assert.deepEqual(new Set(incoming.map((l) => l.req.remoteAddress)), new Set(['192.0.2.77']));
  });
});
