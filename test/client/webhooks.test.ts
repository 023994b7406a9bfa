import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createSubscription } from '../../src/domain/webhooks/service.js';
import { sendTestPing } from '../../src/domain/webhooks/test-ping.js';
import { createClient, type EmergencyEvent, verifyWebhook, WebhookVerificationError } from '../../clients/typescript/src/index.js';
import { type Receiver, startDeliveryServer, startReceiver, waitFor } from '../delivery/helpers.js';
import { createOrgTree, mintKey, type TestServer } from '../helpers/server.js';

describe('TypeScript client: verifyWebhook', () => {
  let server: TestServer;
  let receiver: Receiver;
  before(async () => {
    server = await startDeliveryServer();
    receiver = await startReceiver();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  it('accepts a real delivery and returns its typed event; rejects a tampered body, another secret and missing headers', async () => {
    const org = await createOrgTree(server.ctx);
    const sub = await createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `${receiver.url}/client` });
    const api = createClient({ baseUrl: server.url, apiKey: (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key });
    const declared = await api.POST('/orgs/{org_id}/emergencies', {
      params: { path: { org_id: org.orgId } },
      body: { categoryName: 'Fire', description: 'smoke in the lab' },
    });
    assert.equal(declared.response.status, 201);

    const [delivery] = await waitFor('a delivery', () => (receiver.forPath('/client').length > 0 ? receiver.forPath('/client') : null));
    const event = verifyWebhook(delivery!.body, delivery!.headers, sub.secret);
    assert.equal(event.eventType, 'emergency.declared');
    // Narrowed to EmergencyEvent by the assertion on eventType.
    const typed: EmergencyEvent = event;
    assert.equal(typed.emergencyId, declared.data!.emergencyId);
    assert.equal(typed.orgId, org.orgId);
    assert.equal(typed.sequence, 1);
    assert.equal(typed.data.emergency.category.name, 'Fire');
    assert.equal(typed.data.emergency.description, 'smoke in the lab');
    assert.equal(typed.eventId, delivery!.headers['webhook-id']);

    // The same delivery through the fetch API's Headers and as bytes.
    const viaHeaders = verifyWebhook(Buffer.from(delivery!.body), new Headers(delivery!.headers), sub.secret);
    assert.deepEqual(viaHeaders, event);

    const tampered = delivery!.body.replace('smoke in the lab', 'nothing to see');
    assert.notEqual(tampered, delivery!.body);
    assert.throws(
      () => verifyWebhook(tampered, delivery!.headers, sub.secret),
      (err: unknown) => {
        assert.ok(err instanceof WebhookVerificationError);
        assert.match(err.message, /signature mismatch/);
        return true;
      },
    );
    const other = await createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `${receiver.url}/other` });
    assert.throws(() => verifyWebhook(delivery!.body, delivery!.headers, other.secret), /signature mismatch/);
    const { 'webhook-signature': _dropped, ...unsigned } = delivery!.headers;
    assert.throws(() => verifyWebhook(delivery!.body, unsigned, sub.secret), /missing header webhook-signature/);
    // A delivery replayed later than 5 minutes (same body and signature, old timestamp) is refused too.
    const stale = { ...delivery!.headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 3600) };
    assert.throws(() => verifyWebhook(delivery!.body, stale, sub.secret), WebhookVerificationError);
  });

  it('accepts a webhook.ping', async () => {
    const org = await createOrgTree(server.ctx);
    const sub = await createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `${receiver.url}/ping` });
    const result = await sendTestPing(server.ctx, operatorCaller(), sub.id);
    assert.equal(result.outcome, 'succeeded');
    const [delivery] = receiver.forPath('/ping');
    const event = verifyWebhook(delivery!.body, delivery!.headers, sub.secret);
    assert.equal(event.eventType, 'webhook.ping');
    if (event.eventType === 'webhook.ping') assert.equal(event.data.subscriptionId, sub.id);
  });
});
