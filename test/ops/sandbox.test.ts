import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevices } from '../../src/domain/devices/service.js';
import { createSubscription } from '../../src/domain/webhooks/service.js';
import { type Receiver, startReceiver, waitFor } from '../delivery/helpers.js';
import { connectDevice } from '../devices/support.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * A sandbox instance (extensions §11, `serve --sandbox`) beside a live one, each on its own database: each takes only its own
 * keys, and everything the sandbox sends (events, device frames, webhooks, CAP documents, console pages) says sandbox.
 */
describe('sandbox deployment', () => {
  let sandbox: TestServer;
  let live: TestServer;
  let receiver: Receiver;
  let org: OrgFixture;
  let liveOrg: OrgFixture;
  let testKey: string;
  let liveKey: string;

  before(async () => {
    [sandbox, live, receiver] = await Promise.all([startTestServer({ SANDBOX: 'true' }), startTestServer(), startReceiver()]);
    org = await createOrgTree(sandbox.ctx);
    liveOrg = await createOrgTree(live.ctx);
    testKey = (await mintKey(sandbox.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    liveKey = (await mintKey(live.ctx, { subjectType: 'org', subjectId: liveOrg.orgId })).key;
  });
  after(async () => {
    await Promise.all([sandbox?.close(), live?.close(), receiver?.close()]);
  });

  it('mints enk_test_ keys and takes only those; a live instance refuses them', async () => {
    assert.match(testKey, /^enk_test_[0-9a-f]{72}$/);
    assert.match(liveKey, /^enk_live_[0-9a-f]{72}$/);
    assert.equal((await client(sandbox.base, testKey).get('/me')).status, 200);
    assert.equal((await client(live.base, liveKey).get('/me')).status, 200);
    const liveOnSandbox = await client(sandbox.base, liveKey).get('/me');
    assert.equal(liveOnSandbox.status, 401);
    assert.equal(liveOnSandbox.body.detail.error, 'unauthenticated');
    assert.equal((await client(live.base, testKey).get('/me')).status, 401);
    // Minted over the admin API too.
    const { createAdminKey } = await import('../../src/domain/admin-keys/service.js');
    const adminKey = (await createAdminKey(sandbox.ctx, operatorCaller(), { name: 'root', subject: { type: 'instance' } })).key;
    const minted = await client(`${sandbox.url}/api/admin/v1`, adminKey).post('/api-keys', {
      name: 'integrator',
      subject: { type: 'org', id: org.orgId },
      permissions: ['read', 'write'],
    });
    assert.equal(minted.status, 201);
    assert.match(minted.body.key, /^enk_test_/);
  });

  it('marks every event, device frame, webhook, CAP document and console page', async () => {
    const [device] = await createDevices(sandbox.ctx, operatorCaller(), org.orgId, ['Front office']);
    const station = await connectDevice(`${sandbox.url.replace(/^http/, 'ws')}/devices/v1/stream`, device!.token);
    await createSubscription(sandbox.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `${receiver.url}/sandbox` });
    const api = client(sandbox.base, testKey);
    const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire', description: 'Sandbox fire' });
    assert.equal(declared.status, 201);

    const frame = await waitFor('the device frame', () => station.events.find((e) => e.event.emergencyId === declared.body.emergencyId));
    assert.equal((frame.event as { sandbox?: boolean }).sandbox, true);
    const webhook = await waitFor('the webhook', () => receiver.forPath('/sandbox')[0]);
    assert.equal(webhook.json.sandbox, true);
    assert.equal(webhook.json.eventType, 'emergency.declared');
    const feed = await api.get(`/orgs/${org.orgId}/events`);
    assert.ok(feed.body.items.length > 0 && feed.body.items.every((i: { event: { sandbox?: boolean } }) => i.event.sandbox === true));

    const cap = await fetch(`${sandbox.base}/orgs/${org.orgId}/emergencies/${declared.body.emergencyId}/cap`, {
      headers: { authorization: `Bearer ${testKey}` },
    });
    const xml = await cap.text();
    assert.match(xml, /<status>Test<\/status>/);
    assert.match(xml, /<note>Sandbox instance: a test, not a live alert\.<\/note>/);
    const atom = await (await fetch(`${sandbox.base}/orgs/${org.orgId}/cap/feed`, { headers: { authorization: `Bearer ${testKey}` } })).text();
    assert.match(atom, /<status>Test<\/status>/);
    assert.doesNotMatch(atom, /<status>Actual<\/status>/);

    // `npm test` builds the console first.
    const page = await fetch(`${sandbox.url}/console/orgs/${org.orgId}`);
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /data-environment="sandbox"/);
    assert.match(html, /SANDBOX: a test instance/);
    assert.match(html, /<title>SANDBOX · /);
    await station.close();
  });

  it('a live instance marks nothing', async () => {
    const api = client(live.base, liveKey);
    const declared = await api.post(`/orgs/${liveOrg.orgId}/emergencies`, { categoryName: 'Fire' });
    const feed = await api.get(`/orgs/${liveOrg.orgId}/events`);
    assert.ok(feed.body.items.length > 0 && feed.body.items.every((i: { event: object }) => !('sandbox' in i.event)));
    const xml = await (
      await fetch(`${live.base}/orgs/${liveOrg.orgId}/emergencies/${declared.body.emergencyId}/cap`, { headers: { authorization: `Bearer ${liveKey}` } })
    ).text();
    assert.match(xml, /<status>Actual<\/status>/);
    const page = await fetch(`${live.url}/console`);
    assert.equal(page.status, 200);
    assert.doesNotMatch(await page.text(), /SANDBOX/);
  });
});
