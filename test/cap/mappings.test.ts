import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { createPartner } from '../../src/domain/orgs/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';
import { example, postCap } from './support.js';

/** The admin API's per-org mapping of CAP events to categories: /api/admin/v1/orgs/{org_id}/cap-mappings. */
describe('CAP event mappings (admin API)', () => {
  let server: TestServer;
  let org: OrgFixture;
  let root: ReturnType<typeof client>;
  const admin = (key: string) => client(`${server.url}/api/admin/v1`, key);
  const adminKeyOf = async (subject: { type: 'instance' } | { type: 'partner' | 'enterprise'; id: string }) =>
    (await createAdminKey(server.ctx, operatorCaller(), { name: 'test', subject })).key;

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    root = admin(await adminKeyOf({ type: 'instance' }));
  });
  after(() => server.close());

  it('maps an event to a category, replaces it case-insensitively, lists and deletes it, each audited', async () => {
    const created = await root.post(`/orgs/${org.orgId}/cap-mappings`, { event: 'Severe Thunderstorm', categoryName: 'fire' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(
      { ...created.body, mappingId: undefined, createdAt: undefined, updatedAt: undefined },
      {
        mappingId: undefined,
        orgId: org.orgId,
        event: 'Severe Thunderstorm',
        categoryId: org.categories.Fire,
        categoryName: 'Fire',
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    const replaced = await root.post(`/orgs/${org.orgId}/cap-mappings`, { event: '  SEVERE   thunderstorm ', categoryId: org.categories.Medical });
    assert.equal(replaced.status, 200);
    assert.equal(replaced.body.mappingId, created.body.mappingId);
    assert.deepEqual([replaced.body.event, replaced.body.categoryName], ['SEVERE   thunderstorm', 'Medical']);
    await root.post(`/orgs/${org.orgId}/cap-mappings`, { event: 'Earthquake', categoryName: 'Fire' });
    const list = await root.get(`/orgs/${org.orgId}/cap-mappings`);
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.items.map((m: { event: string; categoryName: string }) => [m.event, m.categoryName]),
      [
        ['Earthquake', 'Fire'],
        ['SEVERE   thunderstorm', 'Medical'],
      ],
    );

    // Ingest follows the mapping at once; after the delete the event lands in Uncategorized.
    const key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    const storm = example('a2-severe-thunderstorm-warning');
    assert.equal((await postCap(server.base, key, org.orgId, storm)).body.category.name, 'Medical');
    const deleted = await root.call('DELETE', `/orgs/${org.orgId}/cap-mappings/${created.body.mappingId}`);
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { mappingId: created.body.mappingId, deleted: true });
    assert.equal((await root.call('DELETE', `/orgs/${org.orgId}/cap-mappings/${created.body.mappingId}`)).status, 404);
    const again = await postCap(server.base, key, org.orgId, storm.replace('KSTO1055887203', 'KSTO1055887204'));
    assert.equal(again.body.category.name, 'Uncategorized');

    const audit = await client(server.base, key).get(`/orgs/${org.orgId}/audit-logs?eventCategory=cap_mapping`);
    assert.deepEqual(
      audit.body.items.map((a: { eventType: string }) => a.eventType),
      ['cap_mapping.deleted', 'cap_mapping.set', 'cap_mapping.set', 'cap_mapping.set'],
    );
    assert.deepEqual(audit.body.items.at(-1).details, { event: 'Severe Thunderstorm', categoryId: org.categories.Fire, previousCategoryId: null });
  });

  it('takes strict bodies and names the field at fault', async () => {
    const cases: [unknown, string[], string][] = [
      [{ event: 'X', categoryName: 'Fire', extra: 1 }, ['body', 'extra'], 'extra_forbidden'],
      [{ event: 'X', categoryName: 'Fire', categoryId: org.categories.Fire }, ['body', 'categoryId'], 'value_error'],
      [{ event: 'X' }, ['body', 'categoryId'], 'value_error'],
      [{ event: ' ', categoryName: 'Fire' }, ['body', 'event'], 'too_short'],
      [{ event: 'X', categoryName: 'No such category' }, ['body', 'categoryName'], 'category_not_found'],
      [{ event: 'x'.repeat(257), categoryName: 'Fire' }, ['body', 'event'], 'too_long'],
    ];
    for (const [body, loc, type] of cases) {
      const res = await root.post(`/orgs/${org.orgId}/cap-mappings`, body);
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.deepEqual([res.body.detail[0].loc, res.body.detail[0].type], [loc, type], JSON.stringify(res.body));
    }
    const missing = await root.get('/orgs/0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b6d/cap-mappings');
    assert.deepEqual([missing.status, missing.body.detail.error], [404, 'not_found']);
  });

  it('is scoped by the admin key subject; API keys are refused', async () => {
    const outsider = admin(await adminKeyOf({ type: 'partner', id: (await createPartner(server.ctx, operatorCaller(), { name: 'Other' })).partnerId }));
    for (const res of [
      await outsider.get(`/orgs/${org.orgId}/cap-mappings`),
      await outsider.post(`/orgs/${org.orgId}/cap-mappings`, { event: 'X', categoryName: 'Fire' }),
    ]) {
      assert.equal(res.status, 404);
      assert.equal(res.body.detail.error, 'not_found');
    }
    const own = admin(await adminKeyOf({ type: 'enterprise', id: org.enterpriseId }));
    assert.equal((await own.post(`/orgs/${org.orgId}/cap-mappings`, { event: 'Enterprise event', categoryName: 'Fire' })).status, 201);
    const apiKey = admin((await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    assert.equal((await apiKey.get(`/orgs/${org.orgId}/cap-mappings`)).status, 401);
  });

  it('honours Idempotency-Key on writes', async () => {
    const headers = { 'idempotency-key': 'cap-mapping-1' };
    const first = await root.post(`/orgs/${org.orgId}/cap-mappings`, { event: 'Tsunami', categoryName: 'Fire' }, headers);
    assert.equal(first.status, 201);
    const retry = await root.post(`/orgs/${org.orgId}/cap-mappings`, { event: 'Tsunami', categoryName: 'Fire' }, headers);
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    const reused = await root.post(`/orgs/${org.orgId}/cap-mappings`, { event: 'Tsunami', categoryName: 'Medical' }, headers);
    assert.equal(reused.status, 422);
    assert.equal(reused.body.detail.error, 'idempotency_key_reused');
  });
});
