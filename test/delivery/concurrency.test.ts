import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createSubscription } from '../../src/domain/webhooks/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { FAST_DISPATCHER, type Receiver, startDeliveryServer, startReceiver, waitFor } from './helpers.js';

/**
 * WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION as a receiver sees it: a real server configured through the
 * environment, a real receiver that holds its requests open and counts how many are open at once.
 */
async function deliverHeld(concurrency: number, events: number, release: (open: number) => boolean, holdMs: number) {
  const server = await startDeliveryServer({
    env: { WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: String(concurrency) },
    // A long request deadline: a held request must not time out and come again.
    dispatcher: { ...FAST_DISPATCHER, requestTimeoutMs: 30_000, leaseMs: 90_000 },
  });
  const receiver: Receiver = await startReceiver();
  try {
    const org = await createOrgTree(server.ctx);
    await createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `${receiver.url}/held` });
    const held = new Set<ServerResponse>();
    let mostAtOnce = 0;
    const answer = (res: ServerResponse) => {
      if (held.delete(res)) res.writeHead(204).end();
    };
    receiver.respond('/held', (_req, res) => {
      held.add(res);
      res.on('close', () => held.delete(res));
      mostAtOnce = Math.max(mostAtOnce, held.size);
      if (release(held.size)) for (const r of [...held]) answer(r);
      else if (holdMs > 0) setTimeout(() => answer(res), holdMs);
    });
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const api = client(server.base, key);
    for (let i = 0; i < events; i++) assert.equal((await api.post(`/orgs/${org.orgId}/emergencies`, { description: `held ${i}` })).status, 201);
    await waitFor('every event delivered', () => new Set(receiver.forPath('/held').map((r) => r.headers['webhook-id'])).size === events, 30_000);
    return { mostAtOnce, requests: receiver.forPath('/held').length };
  } finally {
    await server.close();
    await receiver.close();
  }
}

describe('WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION', () => {
  it('1: a slow receiver never has two requests of the subscription open at once', async () => {
    // Each request is held (300 ms) before its answer; with concurrency 1 the next one waits for it.
    const { mostAtOnce, requests } = await deliverHeld(1, 5, () => false, 300);
    assert.equal(mostAtOnce, 1);
    assert.equal(requests, 5);
  });

  it('3: the receiver gets three requests at once, and never a fourth', async () => {
    // Requests are answered only once three are open together, so delivery completes only if the
    // dispatcher opens three at once; a fourth would show in the count.
    const { mostAtOnce, requests } = await deliverHeld(3, 9, (open) => open >= 3, 0);
    assert.equal(mostAtOnce, 3);
    assert.equal(requests, 9);
  });
});

describe('webhook delivery settings', () => {
  it('defaults, and a value from the environment', () => {
    const defaults = loadConfig({});
    assert.equal(defaults.WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION, 64);
    assert.equal(defaults.WEBHOOK_MAX_IN_FLIGHT, 512);
    assert.equal(defaults.WEBHOOK_CLAIM_BATCH, 128);
    assert.equal(defaults.WEBHOOK_DELIVERY_IN_SERVE, true);
    const set = loadConfig({
      WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: '8',
      WEBHOOK_MAX_IN_FLIGHT: '16',
      WEBHOOK_CLAIM_BATCH: '32',
      WEBHOOK_DELIVERY_IN_SERVE: 'false',
    });
    assert.deepEqual(
      [set.WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION, set.WEBHOOK_MAX_IN_FLIGHT, set.WEBHOOK_CLAIM_BATCH, set.WEBHOOK_DELIVERY_IN_SERVE],
      [8, 16, 32, false],
    );
  });

  it('refuses bad values with a message naming the variable', () => {
    const message = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        assert.ok(err instanceof ConfigError);
        return err.message;
      }
      assert.fail(`accepted ${JSON.stringify(env)}`);
    };
    assert.match(message({ WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: '0' }), /WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION/);
    assert.match(message({ WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: '2.5' }), /WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: a whole number/);
    assert.match(message({ WEBHOOK_CLAIM_BATCH: 'many' }), /WEBHOOK_CLAIM_BATCH/);
    assert.match(message({ WEBHOOK_DELIVERY_IN_SERVE: 'maybe' }), /WEBHOOK_DELIVERY_IN_SERVE/);
    assert.match(
      message({ WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: '100', WEBHOOK_MAX_IN_FLIGHT: '10' }),
      /WEBHOOK_MAX_IN_FLIGHT: must be at least WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION \(100\)/,
    );
  });
});
