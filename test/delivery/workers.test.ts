import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createSubscription, listDeliveryAttempts } from '../../src/domain/webhooks/service.js';
import { onPostgres } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, orgApi, type TestServer } from '../helpers/server.js';
import { killHard, type Receiver, spawnWorker, startDeliveryServer, startReceiver, verify, waitFor } from './helpers.js';

// These suites run the real `emergency-api worker` executable next to an API server that has no
// dispatcher of its own, on the same database (a SQLite file, or a PostgreSQL schema).
describe('standalone webhook workers', () => {
  let server: TestServer;
  let receiver: Receiver;
  const children: ChildProcess[] = [];
  before(async () => {
    server = await startDeliveryServer({ dispatcher: false });
    receiver = await startReceiver();
  });
  after(async () => {
    for (const child of children) await killHard(child);
    await server.close();
    await receiver.close();
  });

  it('delivers after a worker is killed mid-delivery (SIGKILL) and another one starts', async () => {
    const org = await createOrgTree(server.ctx);
    const sub = await createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `${receiver.url}/crash` });
    let firstArrived: () => void;
    const arrived = new Promise<void>((r) => (firstArrived = r));
    receiver.respond('/crash', (_req, res, index) => {
      if (index === 0)
        firstArrived(); // never answered: the worker dies while waiting
      else res.writeHead(200).end();
    });
    // A short lease so the test does not wait for the production one (request timeout + 30 s).
    const workerArgs = ['--timeout-seconds', '1.5', '--lease-seconds', '2', '--poll-seconds', '0.2'];
    const first = await spawnWorker(server.databaseUrl, workerArgs);
    children.push(first);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const declared = await client(server.base, key).post(`/orgs/${org.orgId}/emergencies`, { description: 'crash test' });
    assert.equal(declared.status, 201);
    await arrived;
    await killHard(first);
    const claimed = await server.ctx.db.db.selectFrom('webhook_deliveries').selectAll().where('subscription_id', '=', sub.id).executeTakeFirstOrThrow();
    assert.equal(claimed.status, 'pending', 'the delivery is still owed');
    assert.ok(claimed.claimed_until, 'and leased to the dead worker');
    const second = await spawnWorker(server.databaseUrl, workerArgs);
    children.push(second);
    await waitFor('redelivery by the second worker', () => receiver.forPath('/crash').length >= 2, 20_000);
    const [cut, redelivered] = receiver.forPath('/crash');
    assert.equal(redelivered!.headers['webhook-id'], cut!.headers['webhook-id'], 'the same event, deduplicable by eventId');
    assert.equal(verify(sub.secret, redelivered!).emergencyId, declared.body.emergencyId);
    await waitFor('delivered state recorded', async () => (await listDeliveryAttempts(server.ctx, operatorCaller(), sub.id)).queue.delivered === 1);
    await killHard(second);
  });

  it('two workers on PostgreSQL deliver every event once', {
    skip: !onPostgres && 'PostgreSQL-specific: concurrent workers claim with FOR UPDATE SKIP LOCKED; SQLite runs one worker process (runs in CI on PostgreSQL)',
  }, async () => {
    const org = await createOrgTree(server.ctx);
    const subs = await Promise.all(
      ['/pair-1', '/pair-2'].map((path) =>
        createSubscription(server.ctx, operatorCaller(), { subjectType: 'org', subjectId: org.orgId, url: `${receiver.url}${path}` }),
      ),
    );
    const workerArgs = ['--poll-seconds', '0.2'];
    const workers = await Promise.all([spawnWorker(server.databaseUrl, workerArgs), spawnWorker(server.databaseUrl, workerArgs)]);
    children.push(...workers);
    const api = await orgApi(server, org.orgId);
    const emergencies = 15;
    for (let i = 0; i < emergencies; i++) {
      const id = (await api.post(`/orgs/${org.orgId}/emergencies`, { description: `pair ${i}` })).body.emergencyId;
      await api.patch(`/orgs/${org.orgId}/emergencies/${id}`, { categoryName: 'Fire' });
      await api.post(`/orgs/${org.orgId}/emergencies/${id}/resolutions`, {});
    }
    const expected = emergencies * 3;
    for (const [i, path] of ['/pair-1', '/pair-2'].entries()) {
      await waitFor(`${expected} deliveries on ${path}`, () => receiver.forPath(path).length >= expected, 20_000);
      const ids = receiver.forPath(path).map((r) => verify(subs[i]!.secret, r).eventId);
      assert.equal(ids.length, expected);
      assert.equal(new Set(ids).size, expected, 'no event was sent twice');
    }
    // A worker records its attempts shortly after their answers, in batches.
    const attempts = () =>
      server.ctx.db.db
        .selectFrom('webhook_attempts')
        .select(['worker_id'])
        .where(
          'subscription_id',
          'in',
          subs.map((s) => s.id),
        )
        .execute();
    await waitFor('every attempt recorded', async () => (await attempts()).length >= expected * 2, 10_000);
    assert.equal((await attempts()).length, expected * 2, 'one attempt per delivery');
    for (const w of workers) await killHard(w);
  });
});
