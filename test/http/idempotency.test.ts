import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sweepExpiredAnswers } from '../../src/db/idempotency.js';
import { startServer } from '../../src/server.js';
import { client } from '../helpers/http.js';
import { mintKey, type OrgFixture, orgApi, startOrgServer, type TestServer } from '../helpers/server.js';

// extensions.md §2: Idempotency-Key on every POST and PATCH.
describe('Idempotency-Key', () => {
  let server: TestServer;
  let org: OrgFixture;
  let api: ReturnType<typeof client>;
  let path: string;

  before(async () => {
    ({ server, org, api } = await startOrgServer());
    path = `/orgs/${org.orgId}/emergencies`;
  });
  after(() => server.close());

  const withKey = (key: string) => ({ 'idempotency-key': key });
  const rows = async (table: 'emergencies' | 'events' | 'audit_logs', column: string, value: string) =>
    Number(
      (
        await server.ctx.db.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where(column as never, '=', value as never)
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('a retry with the same key and request replays the answer and writes nothing', async () => {
    const body = { description: 'idem-replay', categoryName: 'Fire', metadata: { b: 1, a: [1, 2] } };
    const first = await api.post(path, body, withKey('replay-1'));
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    // Same request: the same JSON with its keys in another order.
    const again = await api.post(path, { metadata: { a: [1, 2], b: 1 }, categoryName: 'Fire', description: 'idem-replay' }, withKey('replay-1'));
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    assert.equal(await rows('emergencies', 'description', 'idem-replay'), 1);
    assert.equal(await rows('events', 'emergency_id', first.body.emergencyId), 1);
    assert.equal(await rows('audit_logs', 'resource_id', first.body.emergencyId), 1);
  });

  it('the same key with another request is a 422 idempotency_key_reused', async () => {
    assert.equal((await api.post(path, { description: 'idem-a' }, withKey('reuse-1'))).status, 201);
    for (const res of [
      await api.post(path, { description: 'idem-b' }, withKey('reuse-1')),
      await api.post(`${path}/00000000-0000-4000-8000-000000000000/resolutions`, {}, withKey('reuse-1')),
    ]) {
      assert.equal(res.status, 422);
      assert.equal(res.body.detail.error, 'idempotency_key_reused');
    }
    assert.equal(await rows('emergencies', 'description', 'idem-b'), 0);
  });

  it('a refused request (422) leaves the key free', async () => {
    const refused = await api.post(path, { description: 'idem-free', catgoryName: 'Fire' }, withKey('free-1'));
    assert.equal(refused.status, 422);
    const conflict = await api.post(path, { description: 'idem-free', categoryName: 'Volcano' }, withKey('free-1'));
    assert.equal(conflict.status, 422);
    const ok = await api.post(path, { description: 'idem-free', categoryName: 'Fire' }, withKey('free-1'));
    assert.equal(ok.status, 201);
    assert.equal(ok.headers.get('idempotent-replayed'), null);
  });

  it('keys belong to their API key', async () => {
    const other = await orgApi(server, org.orgId);
    const mine = await api.post(path, { description: 'idem-scope-1' }, withKey('scope-1'));
    const theirs = await other.post(path, { description: 'idem-scope-2' }, withKey('scope-1'));
    assert.equal(mine.status, 201);
    assert.equal(theirs.status, 201);
    assert.notEqual(theirs.body.emergencyId, mine.body.emergencyId);
    assert.equal(theirs.headers.get('idempotent-replayed'), null);
  });

  it('concurrent requests with one key write once; the others replay or get 409 with Retry-After', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, () => api.post(path, { description: 'idem-concurrent' }, withKey('concurrent-1'))));
    const ids = new Set(answers.filter((a) => a.status === 201).map((a) => a.body.emergencyId));
    assert.equal(ids.size, 1, JSON.stringify(answers.map((a) => a.status)));
    for (const a of answers) {
      assert.ok(a.status === 201 || a.status === 409, String(a.status));
      if (a.status === 409) {
        assert.equal(a.body.detail.error, 'idempotency_key_in_use');
        assert.equal(a.headers.get('retry-after'), '1');
      }
    }
    assert.equal(await rows('emergencies', 'description', 'idem-concurrent'), 1);
  });

  it('PATCH, resolution and message posts replay too', async () => {
    const id = (await api.post(path, { description: 'idem-transitions' })).body.emergencyId;
    const patched = await api.patch(`${path}/${id}`, { categoryName: 'Fire' }, withKey('patch-1'));
    const patchedAgain = await api.patch(`${path}/${id}`, { categoryName: 'Fire' }, withKey('patch-1'));
    assert.equal(patched.status, 200);
    assert.equal(patchedAgain.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(patchedAgain.body, patched.body);
    const resolved = await api.post(`${path}/${id}/resolutions`, { resolutionNote: 'done' }, withKey('resolve-1'));
    const resolvedAgain = await api.post(`${path}/${id}/resolutions`, { resolutionNote: 'done' }, withKey('resolve-1'));
    assert.equal(resolved.status, 201);
    assert.equal(resolvedAgain.status, 201);
    assert.equal(resolvedAgain.headers.get('idempotent-replayed'), 'true');
    const message = await api.post(`${path}/${id}/messages`, { content: 'after action' }, withKey('message-1'));
    const messageAgain = await api.post(`${path}/${id}/messages`, { content: 'after action' }, withKey('message-1'));
    assert.equal(message.status, 201);
    assert.equal(messageAgain.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(messageAgain.body, message.body);
    // A later post of the same conversation is written without a transaction of its own; its answer is stored with it.
    const second = await api.post(`${path}/${id}/messages`, { content: 'second note' }, withKey('message-2'));
    const secondAgain = await api.post(`${path}/${id}/messages`, { content: 'second note' }, withKey('message-2'));
    assert.equal(second.status, 201);
    assert.equal(secondAgain.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(secondAgain.body, second.body);
    const messages = await server.ctx.db.db.selectFrom('messages').select('id').where('emergency_id', '=', id).execute();
    assert.equal(messages.length, 2);
    assert.equal(await rows('events', 'emergency_id', id), 3, 'declared, categorized, resolved: once each');
  });

  it('an invalid header value is a 422 at the header', async () => {
    for (const value of ['', 'x'.repeat(256)]) {
      const res = await api.post(path, { description: 'idem-bad-header' }, withKey(value));
      assert.equal(res.status, 422, value.length.toString());
      assert.deepEqual(res.body.detail[0].loc, ['header', 'idempotency-key']);
    }
    assert.equal(await rows('emergencies', 'description', 'idem-bad-header'), 0);
  });

  it('expired answers are swept and the key is free again', async () => {
    const first = await api.post(path, { description: 'idem-expire' }, withKey('expire-1'));
    assert.equal(first.status, 201);
    await server.ctx.db.db.updateTable('idempotency_keys').set({ expires_at: '2000-01-01T00:00:00.000Z' }).where('idem_key', '=', 'expire-1').execute();
    assert.ok((await sweepExpiredAnswers(server.ctx.db.db)) >= 1);
    const again = await api.post(path, { description: 'idem-expire-2' }, withKey('expire-1'));
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), null);
  });

  it('two instances on one database: the later commit is rolled back whole and replays the first answer', async () => {
    // A second server on the same database: the in-process check cannot see the other instance's
    // request, so the stored answer's primary key decides.
    const second = await startServer(server.config);
    try {
      const { key: shared } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
      const mine = client(server.base, shared);
      const other = client(`${second.url}/api/public/v1`, shared);
      for (let round = 0; round < 5; round++) {
        const key = `two-instances-${round}`;
        const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? mine : other).post(path, { description: key }, withKey(key))));
        for (const a of answers) assert.ok(a.status === 201 || a.status === 409, `${a.status} ${JSON.stringify(a.body)}`);
        const ids = new Set(answers.filter((a) => a.status === 201).map((a) => a.body.emergencyId));
        assert.equal(ids.size, 1);
        assert.equal(await rows('emergencies', 'description', key), 1);
      }
    } finally {
      await second.stop();
    }
  });
});
