import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { createSubscription } from '../../src/domain/webhooks/service.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { runCli as runCliText } from '../helpers/cli.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, TEST_ENV, type TestServer } from '../helpers/server.js';
import { FAST_DISPATCHER, type Receiver, runCli, startDeliveryServer, startReceiver, waitFor } from './helpers.js';

/**
 * Subscriptions made while private targets were allowed, delivered by a server restarted without: every attempt is
 * refused before any connection, and the deliveries list says why.
 */
describe('a webhook target refused by the target policy', () => {
  let lenient: TestServer;
  let strict: RunningServer;
  let receiver: Receiver;
  let org: OrgFixture;
  let adminKey: string;
  const subscriptions: Record<'byAddress' | 'byName', string> = { byAddress: '', byName: '' };

  before(async () => {
    receiver = await startReceiver();
    lenient = await startDeliveryServer();
    org = await createOrgTree(lenient.ctx);
    const port = new URL(receiver.url).port;
    subscriptions.byAddress = (
      await createSubscription(lenient.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `http://127.0.0.1:${port}/ip` })
    ).id;
    // `localhost` stands in for a public name that resolves to an internal address.
    subscriptions.byName = (
      await createSubscription(lenient.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `http://localhost:${port}/name` })
    ).id;
    adminKey = (await createAdminKey(lenient.ctx, operatorCaller(), { name: 'ops', subject: { type: 'instance' } })).key;
    // Stopped without dropping its database, which the strict server takes over.
    await lenient.stop();
    const config = loadConfig({
      ...TEST_ENV,
      DATABASE_URL: lenient.databaseUrl,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false',
      WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2',
    });
    strict = await startServer(config, undefined, { dispatcher: FAST_DISPATCHER });
  });

  after(async () => {
    await strict?.stop();
    await lenient?.close();
    await receiver?.close();
  });

  it('records the reason on the attempt: in the admin API and in `admin webhook deliveries`, human and --json', async () => {
    const api = client(`${strict.url}/api/public/v1`, (await mintKey(strict.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    assert.equal((await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'smoke in the lab' })).status, 201);
    const admin = client(`${strict.url}/api/admin/v1`, adminKey);
    const expected = {
      byAddress: 'refused by target policy: 127.0.0.1 is a loopback address',
      byName: 'refused by target policy: localhost resolves to 127.0.0.1, a loopback address',
    };
    for (const [which, reason] of Object.entries(expected) as [keyof typeof expected, string][]) {
      const id = subscriptions[which];
      const deliveries = await waitFor(`an attempt of ${which}`, async () => {
        const res = await admin.get(`/webhooks/${id}/deliveries`);
        assert.equal(res.status, 200);
        return res.body.items[0]?.attempts.length > 0 ? res.body : null;
      });
      assert.equal(deliveries.items[0].eventType, 'emergency.declared');
      assert.equal(deliveries.items[0].attempts[0].error, reason);
      assert.equal(deliveries.items[0].attempts[0].responseStatus, null);

      const json = await runCli(lenient.databaseUrl, ['admin', 'webhook', 'deliveries', id]);
      assert.equal(json.code, 0, json.stderr);
      assert.equal(json.json.subscriptionId, id);
      assert.ok(JSON.stringify(json.json.items).includes(JSON.stringify(reason)), JSON.stringify(json.json));
      const text = await runCliText(['admin', 'webhook', 'deliveries', id], { DATABASE_URL: lenient.databaseUrl });
      assert.equal(text.code, 0, text.stderr);
      assert.ok(text.stdout.includes(reason), text.stdout);
    }
    assert.equal(receiver.requests.length, 0, 'no connection reached the receiver');
  });
});
