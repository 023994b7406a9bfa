import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createSubscription, listDeliveryAttempts } from '../../src/domain/webhooks/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type TestServer } from '../helpers/server.js';
import { type Receiver, startDeliveryServer, startReceiver, verify, waitFor } from './helpers.js';

/**
 * A name server on a loopback UDP port: `x.test` names have the address 127.0.0.1 (and no IPv6
 * address), `y.test` names are never answered, anything else does not exist. Queries are counted.
 */
async function startNameServer(): Promise<{ address: string; queries: Map<string, number>; close(): Promise<void> }> {
  const queries = new Map<string, number>();
  const socket: Socket = createSocket('udp4');
  socket.on('message', (msg, peer) => {
    let at = 12;
    const labels: string[] = [];
    while (msg[at]! > 0) {
      labels.push(msg.subarray(at + 1, at + 1 + msg[at]!).toString('ascii'));
      at += msg[at]! + 1;
    }
    const name = labels.join('.').toLowerCase();
    const type = msg.readUInt16BE(at + 1);
    const question = msg.subarray(12, at + 5);
    queries.set(name, (queries.get(name) ?? 0) + 1);
    if (name === 'y.test' || name.endsWith('.y.test')) return;
    const known = name === 'x.test' || name.endsWith('.x.test');
    const answer = known && type === 1 ? Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]) : Buffer.alloc(0);
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0);
    header.writeUInt16BE(0x8180 | (known ? 0 : 3), 2); // a response, recursion available; NXDOMAIN for unknown names
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answer.length > 0 ? 1 : 0, 6);
    socket.send(Buffer.concat([header, question, answer]), peer.port, peer.address);
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    queries,
    close: () => new Promise<void>((r) => socket.close(() => r())),
  };
}

const Y_SUBSCRIPTIONS = 8;
const Y_DECLARES = 150;
const DNS_MAX_IN_FLIGHT = 4;

describe('webhook isolation between tenants', () => {
  let server: TestServer;
  let receiver: Receiver;
  let names: Awaited<ReturnType<typeof startNameServer>>;
  before(async () => {
    names = await startNameServer();
    receiver = await startReceiver();
    server = await startDeliveryServer({
      env: {
        WEBHOOK_DNS_SERVERS: names.address,
        WEBHOOK_DNS_TIMEOUT_MS: '1500',
        WEBHOOK_DNS_MAX_IN_FLIGHT: String(DNS_MAX_IN_FLIGHT),
        // One retry, a minute later: Y's failed deliveries stay scheduled while the test looks.
        WEBHOOK_RETRY_SCHEDULE: '60',
      },
      // The default per-subscription concurrency (64) and process cap (512): Y's eight subscriptions could fill it.
      dispatcher: { requestTimeoutMs: 3000, pollIntervalMs: 200 },
    });
  });
  after(async () => {
    await server.close();
    await receiver.close();
    await names.close();
  });

  it("one tenant's unresolvable endpoints do not delay another tenant's delivery; lookups stay bounded", async () => {
    const port = new URL(receiver.url).port;
    const tenantY = await createOrgTree(server.ctx);
    const tenantX = await createOrgTree(server.ctx);
    const ySubs: string[] = [];
    for (let n = 1; n <= Y_SUBSCRIPTIONS; n++) {
      const url = `http://hook-${n}.y.test:${port}/y${n}`;
      ySubs.push((await createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: tenantY.orgId, url })).id);
    }
    const xSub = await createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: tenantX.orgId, url: `http://x.test:${port}/x` });

    const gauge = server.ctx.metrics.webhookDnsLookupsInFlight;
    let mostInFlight = 0;
    const sampler = setInterval(async () => {
      mostInFlight = Math.max(mostInFlight, (await gauge.get()).values[0]?.value ?? 0);
    }, 2);

    try {
      const yApi = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: tenantY.orgId })).key);
      for (let i = 0; i < Y_DECLARES; i += 10) {
        const batch = Array.from({ length: Math.min(10, Y_DECLARES - i) }, (_, k) =>
          yApi.post(`/orgs/${tenantY.orgId}/emergencies`, { description: `y ${i + k}` }),
        );
        for (const res of await Promise.all(batch)) assert.equal(res.status, 201);
      }

      const xApi = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: tenantX.orgId })).key);
      const declared = await xApi.post(`/orgs/${tenantX.orgId}/emergencies`, { description: 'x' });
      assert.equal(declared.status, 201);
      const declaredAt = Date.now();
      const [got] = await waitFor('X delivered', () => (receiver.forPath('/x').length > 0 ? receiver.forPath('/x') : null), 30_000);
      const latencyMs = got!.receivedAt - declaredAt;
      assert.ok(latencyMs < 5000, `X's delivery took ${latencyMs} ms`);
      assert.equal(verify(xSub.secret, got!).emergencyId, declared.body.emergencyId);
      assert.equal(got!.headers.host, `x.test:${port}`);

      // Every Y delivery got one attempt, failed on DNS, and waits for its retry.
      for (const id of ySubs) {
        const log = await waitFor(
          `attempts of ${id}`,
          async () => {
            const l = await listDeliveryAttempts(server.ctx, operatorCaller(), id, 200);
            return l.items.length === Y_DECLARES ? l : null;
          },
          20_000,
        );
        assert.deepEqual(log.queue, { pending: Y_DECLARES, delivered: 0, failed: 0 });
        assert.ok(
          log.items.every((a) => a.outcome === 'failed' && a.attempt === 1 && a.error === 'DNS lookup timed out (dns_timeout)'),
          JSON.stringify(log.items.find((a) => a.error !== 'DNS lookup timed out (dns_timeout)')),
        );
      }
      const soonest = await server.ctx.db.db
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.min('next_attempt_at').as('at'))
        .where('org_id', '=', tenantY.orgId)
        .executeTakeFirstOrThrow();
      assert.ok(Date.parse(String(soonest.at)) > Date.now() + 30_000, `Y's retries are due at ${soonest.at}`);
    } finally {
      clearInterval(sampler);
    }

    assert.equal(receiver.requests.filter((r) => r.path !== '/x').length, 0);
    assert.ok(mostInFlight >= 1, 'lookups were counted');
    assert.ok(mostInFlight <= DNS_MAX_IN_FLIGHT, `${mostInFlight} lookups were in flight at once`);
    // Y's names were looked up a few times, not once per delivery (A and AAAA, each sent at most twice).
    let yQueries = 0;
    for (const [name, count] of names.queries) if (name.endsWith('.y.test')) yQueries += count;
    assert.ok(yQueries <= Y_SUBSCRIPTIONS * 2 * 2 * 2, `${yQueries} queries for Y's names`);
  });

  it('DNS settings: defaults, values from the environment, and bad values named', () => {
    const defaults = loadConfig({});
    assert.deepEqual([defaults.WEBHOOK_DNS_SERVERS, defaults.WEBHOOK_DNS_TIMEOUT_MS, defaults.WEBHOOK_DNS_MAX_IN_FLIGHT], [[], 3000, 32]);
    const set = loadConfig({
      WEBHOOK_DNS_SERVERS: '10.0.0.2, 10.0.0.3:5353,[2001:db8::1]:53,2001:db8::2',
      WEBHOOK_DNS_TIMEOUT_MS: '500',
      WEBHOOK_DNS_MAX_IN_FLIGHT: '8',
    });
    assert.deepEqual(set.WEBHOOK_DNS_SERVERS, ['10.0.0.2', '10.0.0.3:5353', '[2001:db8::1]:53', '2001:db8::2']);
    assert.deepEqual([set.WEBHOOK_DNS_TIMEOUT_MS, set.WEBHOOK_DNS_MAX_IN_FLIGHT], [500, 8]);
    for (const [key, value] of [
      ['WEBHOOK_DNS_SERVERS', 'dns.example.com'],
      ['WEBHOOK_DNS_SERVERS', '10.0.0.2:99999'],
      ['WEBHOOK_DNS_SERVERS', '[10.0.0.2]:53'],
      ['WEBHOOK_DNS_TIMEOUT_MS', '10'],
      ['WEBHOOK_DNS_MAX_IN_FLIGHT', '0'],
    ]) {
      assert.throws(
        () => loadConfig({ [key]: value }),
        (err) => err instanceof ConfigError && err.message.includes(key),
        `${key}=${value}`,
      );
    }
  });
});
