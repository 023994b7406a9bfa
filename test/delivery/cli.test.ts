import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOrgTree, type TestServer } from '../helpers/server.js';
import { type Receiver, runCli, startDeliveryServer, startReceiver, verify, waitFor } from './helpers.js';

describe('admin webhook commands (real executable)', () => {
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

  it('creates a subscription (secret shown once), lists it without secrets, pings it, and refuses private URLs in production', async () => {
    const org = await createOrgTree(server.ctx);
    const created = await runCli(server.databaseUrl, [
      'admin',
      'webhook',
      'create',
      '--subject',
      `org:${org.orgId}`,
      '--url',
      `${receiver.url}/cli`,
      '--events',
      'emergency.declared,emergency.resolved',
    ]);
    assert.equal(created.code, 0, created.stderr);
    assert.deepEqual(Object.keys(created.json).sort(), ['id', 'secret']);
    assert.match(created.json.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const { id, secret } = created.json;

    const [listed, pinged, refused, deliveries] = await Promise.all([
      runCli(server.databaseUrl, ['admin', 'webhook', 'list']),
      runCli(server.databaseUrl, ['admin', 'webhook', 'test', id]),
      runCli(server.databaseUrl, ['admin', 'webhook', 'create', '--subject', `org:${org.orgId}`, '--url', 'https://10.0.0.5/hook'], {
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false',
      }),
      runCli(server.databaseUrl, ['admin', 'webhook', 'deliveries', id, '--limit', '5']),
    ]);
    assert.equal(listed.code, 0, listed.stderr);
    const item = listed.json.items.find((s: { id: string }) => s.id === id);
    assert.deepEqual(item.subject, { type: 'org', id: org.orgId });
    assert.deepEqual(item.eventTypes, ['emergency.declared', 'emergency.resolved']);
    assert.equal(item.status, 'active');
    assert.ok(!JSON.stringify(listed.json).includes('whsec_'), 'list never shows secrets');

    assert.equal(pinged.code, 0, pinged.stderr);
    assert.equal(pinged.json.outcome, 'succeeded');
    const ping = await waitFor('ping', () => receiver.forPath('/cli')[0]);
    assert.equal(verify(secret, ping).eventType, 'webhook.ping');

    assert.notEqual(refused.code, 0);
    // stderr: the line naming the database, then the error.
    assert.match(JSON.parse(refused.stderr.trimEnd().split('\n').at(-1)!).error, /non-public address/);

    assert.equal(deliveries.code, 0, deliveries.stderr);
    assert.equal(deliveries.json.subscriptionId, id);

    const audit = await server.ctx.db.db
      .selectFrom('audit_logs')
      .select('event_type')
      .where('org_id', '=', org.orgId)
      .where('event_category', '=', 'webhook')
      .execute();
    assert.deepEqual(audit.map((a) => a.event_type).sort(), ['webhook.created', 'webhook.tested']);
  });
});
