import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createEnterprise, createOrg, createPartner } from '../../src/domain/orgs/service.js';
import { createSubscription, getSubscription, listDeliveryAttempts, replayDeliveries, rotateSubscriptionSecret } from '../../src/domain/webhooks/service.js';
import { sendTestPing } from '../../src/domain/webhooks/test-ping.js';
import type { SubscriptionSpec } from '../../src/domain/webhooks/schema.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type TestServer } from '../helpers/server.js';
import { type Receiver, startDeliveryServer, startReceiver, verify, waitFor } from './helpers.js';

describe('webhook delivery', () => {
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

  const subscribe = async (path: string, spec: Omit<SubscriptionSpec, 'url'>) =>
    createSubscription(server.ctx, operatorCaller(), { ...spec, url: `${receiver.url}${path}` });

  async function apiFor(orgId: string) {
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: orgId });
    return client(server.base, key);
  }

  it('delivers declared, categorized and resolved with sequences 1..3, signed per Standard Webhooks', async () => {
    const org = await createOrgTree(server.ctx);
    const sub = await subscribe('/lifecycle', { subjectType: 'org', subjectId: org.orgId });
    const api = await apiFor(org.orgId);
    const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'smoke in the lab', externalId: 'lab-1' });
    assert.equal(declared.status, 201);
    const id = declared.body.emergencyId;
    assert.equal((await api.patch(`/orgs/${org.orgId}/emergencies/${id}`, { categoryName: 'Fire' })).status, 200);
    assert.equal((await api.post(`/orgs/${org.orgId}/emergencies/${id}/resolutions`, { resolutionNote: 'out' })).status, 201);

    const got = await waitFor('three deliveries', () => (receiver.forPath('/lifecycle').length >= 3 ? receiver.forPath('/lifecycle') : null));
    const envelopes = got.map((req) => verify(sub.secret, req)).sort((a, b) => a.sequence - b.sequence);
    assert.deepEqual(
      envelopes.map((e) => [e.sequence, e.eventType, e.data.emergency.status]),
      [
        [1, 'emergency.declared', 'declared'],
        [2, 'emergency.categorized', 'categorized'],
        [3, 'emergency.resolved', 'resolved'],
      ],
    );
    for (const e of envelopes) {
      assert.equal(e.emergencyId, id);
      assert.equal(e.orgId, org.orgId);
      assert.equal(e.apiVersion, '1.0.0');
      assert.equal(e.data.emergency.externalId, 'lab-1');
      assert.match(e.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    for (const req of got) {
      assert.equal(req.headers['webhook-id'], req.json.eventId, 'webhook-id is the eventId');
      assert.match(req.headers['webhook-signature']!, /^v1,[A-Za-z0-9+/=]+$/);
      assert.equal(req.headers['content-type'], 'application/json');
    }
    assert.equal(envelopes[1].data.emergency.category.name, 'Fire');
    const log = await waitFor('attempts recorded', async () => {
      const l = await listDeliveryAttempts(server.ctx, operatorCaller(), sub.id);
      return l.queue.delivered === 3 ? l : null;
    });
    assert.equal(log.items.length, 3);
    assert.ok(log.items.every((a) => a.outcome === 'succeeded' && a.responseCode === 204 && a.attempt === 1));
  });

  it('delivers to subscriptions covering the org by org, enterprise, partner and allowedOrgIds, and to no other', async () => {
    const partnerId = (await createPartner(server.ctx, operatorCaller(), { name: 'Coverage partner' })).partnerId;
    const e1 = (await createEnterprise(server.ctx, operatorCaller(), partnerId, { name: 'E1' })).enterpriseId;
    const e2 = (await createEnterprise(server.ctx, operatorCaller(), partnerId, { name: 'E2' })).enterpriseId;
    const orgA = (await createOrg(server.ctx, operatorCaller(), e1, { name: 'A' })).orgId;
    const orgB = (await createOrg(server.ctx, operatorCaller(), e1, { name: 'B' })).orgId;
    const orgC = (await createOrg(server.ctx, operatorCaller(), e2, { name: 'C' })).orgId;
    const other = await createOrgTree(server.ctx);

    const subs = {
      orgA: await subscribe('/cov/org-a', { subjectType: 'org', subjectId: orgA }),
      enterprise1: await subscribe('/cov/ent-1', { subjectType: 'enterprise', subjectId: e1 }),
      partner: await subscribe('/cov/partner', { subjectType: 'partner', subjectId: partnerId }),
      partnerOnlyB: await subscribe('/cov/partner-b', { subjectType: 'partner', subjectId: partnerId, allowedOrgIds: [orgB] }),
      otherPartner: await subscribe('/cov/other', { subjectType: 'partner', subjectId: other.partnerId }),
      resolvedOnlyC: await subscribe('/cov/c-resolved', { subjectType: 'org', subjectId: orgC, eventTypes: ['emergency.resolved'] }),
    };
    for (const orgId of [orgA, orgB, orgC]) {
      const res = await (await apiFor(orgId)).post(`/orgs/${orgId}/emergencies`, { description: `in ${orgId}` });
      assert.equal(res.status, 201);
    }
    const expected: Record<string, string[]> = {
      '/cov/org-a': [orgA],
      '/cov/ent-1': [orgA, orgB],
      '/cov/partner': [orgA, orgB, orgC],
      '/cov/partner-b': [orgB],
    };
    await waitFor('covering deliveries', () =>
      Object.entries(expected).every(([path, orgs]) => new Set(receiver.forPath(path).map((r) => r.headers['webhook-id'])).size >= orgs.length),
    );
    for (const [path, orgs] of Object.entries(expected)) {
      const secret = Object.values(subs).find((s) => s.record.url.endsWith(path))!.secret;
      // Receivers deduplicate on eventId (a slow answer on a loaded machine can cause a retry).
      const byEvent = new Map(receiver.forPath(path).map((r) => [r.headers['webhook-id'], verify(secret, r).orgId]));
      assert.deepEqual([...byEvent.values()].sort(), [...orgs].sort(), path);
    }
    // Every fan-out for these events has committed (each org's fan-out is one transaction), so the
    // non-covering subscriptions' queues are final: nothing was ever queued for them.
    for (const sub of [subs.otherPartner, subs.resolvedOnlyC]) {
      const queued = await server.ctx.db.db.selectFrom('webhook_deliveries').select('id').where('subscription_id', '=', sub.id).execute();
      assert.equal(queued.length, 0);
    }
    assert.equal(receiver.forPath('/cov/other').length, 0);
    assert.equal(receiver.forPath('/cov/c-resolved').length, 0);
  });

  it('retries after 500 responses on the schedule and records every attempt', async () => {
    const org = await createOrgTree(server.ctx);
    const sub = await subscribe('/flaky', { subjectType: 'org', subjectId: org.orgId });
    receiver.respond('/flaky', (_req, res, index) => {
      if (index < 2) res.writeHead(500, { 'content-type': 'text/plain' }).end(`temporary failure ${index} ${'x'.repeat(3000)}`);
      else res.writeHead(200).end('ok');
    });
    await (await apiFor(org.orgId)).post(`/orgs/${org.orgId}/emergencies`, {});
    const log = await waitFor('delivered after retries', async () => {
      const l = await listDeliveryAttempts(server.ctx, operatorCaller(), sub.id);
      return l.queue.delivered === 1 ? l : null;
    });
    const attempts = [...log.items].reverse();
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.outcome, a.responseCode]),
      [
        [1, 'failed', 500],
        [2, 'failed', 500],
        [3, 'succeeded', 200],
      ],
    );
    assert.ok(attempts[0]!.responseBody!.startsWith('temporary failure 0'));
    assert.equal(Buffer.byteLength(attempts[0]!.responseBody!), 1024, 'only the first 1 KiB of a response is kept');
    const ids = receiver.forPath('/flaky').map((r) => r.headers['webhook-id']);
    assert.equal(new Set(ids).size, 1, 'every retry carries the same webhook-id');
    for (const r of receiver.forPath('/flaky')) verify(sub.secret, r);
    assert.equal((await getSubscription(server.ctx, operatorCaller(), sub.id)).failingSince, null, 'a success ends the failure run');
  });

  it('retries after a timeout', async () => {
    const org = await createOrgTree(server.ctx);
    const sub = await subscribe('/slow', { subjectType: 'org', subjectId: org.orgId });
    receiver.respond('/slow', (_req, res, index) => {
      if (index === 0)
        setTimeout(() => res.writeHead(200).end(), 5000).unref(); // beyond the 1.5 s test timeout
      else res.writeHead(200).end();
    });
    await (await apiFor(org.orgId)).post(`/orgs/${org.orgId}/emergencies`, {});
    const log = await waitFor('delivered after a timeout', async () => {
      const l = await listDeliveryAttempts(server.ctx, operatorCaller(), sub.id);
      return l.queue.delivered === 1 ? l : null;
    });
    const attempts = [...log.items].reverse();
    assert.deepEqual(
      attempts.map((a) => [a.outcome, a.responseCode, a.error]),
      [
        ['failed', null, 'timeout'],
        ['succeeded', 200, null],
      ],
    );
  });

  it('gives up after the last retry of the schedule', async () => {
    const org = await createOrgTree(server.ctx);
    const sub = await subscribe('/down', { subjectType: 'org', subjectId: org.orgId });
    receiver.respond('/down', (_req, res) => void res.writeHead(503).end());
    await (await apiFor(org.orgId)).post(`/orgs/${org.orgId}/emergencies`, {});
    const log = await waitFor('failed for good', async () => {
      const l = await listDeliveryAttempts(server.ctx, operatorCaller(), sub.id);
      return l.queue.failed === 1 ? l : null;
    });
    assert.equal(log.items.length, 4, 'the first attempt and three retries (WEBHOOK_RETRY_SCHEDULE=0.2,0.2,0.2)');
    const record = await getSubscription(server.ctx, operatorCaller(), sub.id);
    assert.equal(record.status, 'active');
    assert.ok(record.failingSince, 'the failure run is tracked for the five-day rule');
  });

  it('honours Retry-After', async () => {
    const org = await createOrgTree(server.ctx);
    const sub = await subscribe('/busy', { subjectType: 'org', subjectId: org.orgId });
    receiver.respond('/busy', (_req, res, index) => {
      if (index === 0) res.writeHead(429, { 'retry-after': '1' }).end();
      else res.writeHead(200).end();
    });
    await (await apiFor(org.orgId)).post(`/orgs/${org.orgId}/emergencies`, {});
    await waitFor('first attempt recorded', async () => (await listDeliveryAttempts(server.ctx, operatorCaller(), sub.id)).items.length === 1);
    const row = await server.ctx.db.db.selectFrom('webhook_deliveries').selectAll().where('subscription_id', '=', sub.id).executeTakeFirstOrThrow();
    const attempt = (await listDeliveryAttempts(server.ctx, operatorCaller(), sub.id)).items[0]!;
    // The schedule says 0.2 s (±20 %); the subscriber asked for 1 s, which wins.
    assert.ok(Date.parse(row.next_attempt_at) - Date.parse(attempt.startedAt) >= 1000);
    await waitFor('delivered after Retry-After', async () => (await listDeliveryAttempts(server.ctx, operatorCaller(), sub.id)).queue.delivered === 1);
  });

  it('disables a subscription answering 410 Gone, and queues nothing more for it', async () => {
    const org = await createOrgTree(server.ctx);
    const sub = await subscribe('/gone', { subjectType: 'org', subjectId: org.orgId });
    receiver.respond('/gone', (_req, res) => void res.writeHead(410).end());
    const api = await apiFor(org.orgId);
    await api.post(`/orgs/${org.orgId}/emergencies`, {});
    await waitFor('disabled', async () => (await getSubscription(server.ctx, operatorCaller(), sub.id)).status === 'disabled');
    const record = await getSubscription(server.ctx, operatorCaller(), sub.id);
    assert.match(record.disabledReason!, /410/);
    const audit = await server.ctx.db.db
      .selectFrom('audit_logs')
      .selectAll()
      .where('org_id', '=', org.orgId)
      .where('event_type', '=', 'webhook.disabled')
      .execute();
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.resource_id, sub.id);
    await api.post(`/orgs/${org.orgId}/emergencies`, {});
    const other = await subscribe('/gone-witness', { subjectType: 'org', subjectId: org.orgId });
    await api.post(`/orgs/${org.orgId}/emergencies`, {});
    await waitFor('witness delivery', () => receiver.forPath('/gone-witness').length === 1);
    verify(other.secret, receiver.forPath('/gone-witness')[0]!);
    assert.equal(receiver.forPath('/gone').length, 1, 'nothing is sent after the 410');
  });

  it('signs with both secrets from the first delivery claimed after a rotation', async () => {
    const org = await createOrgTree(server.ctx);
    const sub = await subscribe('/rotate', { subjectType: 'org', subjectId: org.orgId });
    const api = await apiFor(org.orgId);
    // A delivery before the rotation: the dispatcher has this subscription in hand when it rotates.
    await api.post(`/orgs/${org.orgId}/emergencies`, {});
    const [before] = await waitFor('delivery', () => (receiver.forPath('/rotate').length === 1 ? receiver.forPath('/rotate') : null));
    assert.equal(before!.headers['webhook-signature']!.split(' ').length, 1);
    verify(sub.secret, before!);
    const rotated = await rotateSubscriptionSecret(server.ctx, operatorCaller(), sub.id);
    assert.notEqual(rotated.secret, sub.secret);
    assert.match(rotated.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const graceHours = (Date.parse(rotated.previousSecretExpiresAt) - Date.now()) / 3_600_000;
    assert.ok(graceHours > 23.9 && graceHours <= 24);
    await api.post(`/orgs/${org.orgId}/emergencies`, {});
    const [, req] = await waitFor('delivery', () => (receiver.forPath('/rotate').length === 2 ? receiver.forPath('/rotate') : null));
    assert.equal(req!.headers['webhook-signature']!.split(' ').length, 2);
    assert.equal(verify(rotated.secret, req!).eventType, 'emergency.declared');
    assert.equal(verify(sub.secret, req!).eventType, 'emergency.declared');
    assert.throws(() => verify(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, req!));
  });

  it('replays events since a time with their original eventId, and pings on demand', async () => {
    const org = await createOrgTree(server.ctx);
    const sub = await subscribe('/replay', { subjectType: 'org', subjectId: org.orgId });
    const since = new Date(Date.now() - 1000).toISOString();
    await (await apiFor(org.orgId)).post(`/orgs/${org.orgId}/emergencies`, {});
    await waitFor('first delivery', () => receiver.forPath('/replay').length === 1);
    const replay = await replayDeliveries(server.ctx, operatorCaller(), sub.id, since);
    assert.equal(replay.requeued, 1);
    await waitFor('replayed delivery', () => receiver.forPath('/replay').length === 2);
    const [first, again] = receiver.forPath('/replay').map((r) => verify(sub.secret, r));
    assert.equal(first.eventId, again.eventId);

    const ping = await sendTestPing(server.ctx, operatorCaller(), sub.id);
    assert.equal(ping.outcome, 'succeeded');
    assert.equal(ping.responseCode, 204);
    const pinged = receiver.forPath('/replay')[2]!;
    assert.equal(verify(sub.secret, pinged).eventType, 'webhook.ping');
    const log = await listDeliveryAttempts(server.ctx, operatorCaller(), sub.id);
    assert.equal(log.items[0]!.eventType, 'webhook.ping');
  });
});

describe('webhook delivery with more subscriptions than process-wide slots', () => {
  let server: TestServer;
  let receiver: Receiver;
  before(async () => {
    server = await startDeliveryServer({
      dispatcher: { requestTimeoutMs: 1500, leaseMs: 3000, pollIntervalMs: 200, maxInFlight: 2, perSubscriptionConcurrency: 1 },
    });
    receiver = await startReceiver();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  it('serves every subscription, not only the first ones', async () => {
    const org = await createOrgTree(server.ctx);
    const subs = [];
    for (let i = 0; i < 6; i++) {
      subs.push(await createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `${receiver.url}/many-${i}` }));
    }
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const api = client(server.base, key);
    for (let i = 0; i < 5; i++) assert.equal((await api.post(`/orgs/${org.orgId}/emergencies`, { description: `burst ${i}` })).status, 201);
    for (const [i, sub] of subs.entries()) {
      await waitFor(`deliveries of subscription ${i}`, () => new Set(receiver.forPath(`/many-${i}`).map((r) => r.headers['webhook-id'])).size === 5);
      for (const r of receiver.forPath(`/many-${i}`)) verify(sub.secret, r);
    }
  });
});
