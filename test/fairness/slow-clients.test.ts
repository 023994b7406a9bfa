import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { connectDevice } from '../devices/support.js';
import { AlertPathProbe, abuseLoop, assertFairShare } from '../helpers/alert-path.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, startTestServer, type TestServer } from '../helpers/server.js';

/** The abuser's source address: Linux routes all of 127.0.0.0/8 to loopback, so it differs from everyone else's 127.0.0.1. */
const ABUSER = '127.0.0.2';
const HEADERS_TIMEOUT_MS = 1_000;
const UPGRADE_HEAD =
  'GET /devices/v1/stream HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';

/** A socket from `from` that behaves as `kind` until the server closes it; resolves with what the server sent before closing. */
function slowClient(port: number, from: string, kind: 'idle' | 'trickle' | 'upgrade'): Promise<{ received: string; socket: Socket }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: from });
    let received = '';
    let trickle: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      if (kind === 'trickle') {
        socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
        trickle = setInterval(() => socket.writable && socket.write('X-Slow: 1\r\n'), 100);
      }
      // A complete upgrade request with a bad token whose answer is never read, and the socket never closed by the client.
      if (kind === 'upgrade') socket.write(`${UPGRADE_HEAD}Authorization: Bearer enk_dev_${'0'.repeat(72)}\r\n\r\n`);
    });
    socket.on('data', (chunk) => {
      received += chunk.toString();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(trickle);
      resolve({ received, socket });
    });
  });
}

/**
 * Extensions §13, slow clients: one address holding idle, trickling and unfinished-upgrade sockets takes only its own share of
 * connections (UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS), each cut at HEADERS_TIMEOUT_MS; /healthz, REST with a key and device
 * upgrades from other addresses keep working, and the other tenant's alert path keeps its bound.
 */
describe('fair share: slow clients', () => {
  let server: TestServer;
  let port: number;

  before(async () => {
    server = await startTestServer({ HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS) }, { dispatcher: false, deadlines: false });
    port = Number(new URL(server.url).port);
  });
  after(() => server.close());

  it('cuts a header trickle, an idle socket and an unread refused upgrade at the headers timeout', async () => {
    const started = performance.now();
    const [trickle, idle, upgrade] = await Promise.all([
      slowClient(port, '127.0.0.3', 'trickle'),
      slowClient(port, '127.0.0.3', 'idle'),
      slowClient(port, '127.0.0.3', 'upgrade'),
    ]);
    // Node's check runs every quarter of the timeout: closed within the timeout and that interval, well before the old 60 s.
    assert.ok(performance.now() - started < 10 * HEADERS_TIMEOUT_MS, `closed after ${(performance.now() - started).toFixed(0)} ms`);
    assert.match(trickle.received, /^HTTP\/1\.1 408 /, 'the trickle is answered 408 before it is closed');
    assert.equal(idle.received, '');
    assert.match(upgrade.received, /^HTTP\/1\.1 401 /);
  });

  it('keeps /healthz, REST, device upgrades and the other tenant within bound while one address opens 1,000 slow sockets', async () => {
    const probe = await AlertPathProbe.open(server);
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const devices = await Promise.all([0, 1, 2].map((i) => createDevice(server.ctx, operatorCaller(), org.orgId, { name: `Station ${i}` })));
    const wsUrl = `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`;
    const quiet = await probe.measure(20);

    const kinds = ['idle', 'trickle', 'upgrade'] as const;
    let mostHeld = 0;
    // At most 100 of the abuser's sockets are open in the test process at once, so its descriptors stay far from `ulimit -n`.
    const abuse = abuseLoop(async (i) => {
      await slowClient(port, ABUSER, kinds[i % 3]!);
      mostHeld = Math.max(mostHeld, server.app.services.intake!.heldBy(ABUSER));
    }, 100);
    try {
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
      assert.equal((await client(server.base, key).get(`/orgs/${org.orgId}/emergencies`)).status, 200);
      for (const device of devices) await (await connectDevice(wsUrl, device.token)).close();
      const abused = await probe.measure(20);
      assertFairShare(quiet, abused, 'one address holding slow sockets');
      // Long enough for the held sockets to be cut and replaced: the abuser's 1,000 connections are reached.
      while (abuse.rounds() < 1_000) await new Promise((r) => setTimeout(r, 100));
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    } finally {
      await abuse.stop();
      await probe.close();
    }
    assert.ok(mostHeld <= server.config.UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS, `the abuser held ${mostHeld} connections`);
    assert.ok(mostHeld > 0);
  });
});
