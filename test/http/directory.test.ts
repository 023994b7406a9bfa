import { operatorCaller } from '../../src/domain/access/principal.js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createCategory } from '../../src/domain/categories/service.js';
import { client } from '../helpers/http.js';
import { addUser, createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

async function collect(api: ReturnType<typeof client>, path: string, limit: number): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const res: any = await api.get(`${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    items.push(...res.body.items);
    cursor = res.body.nextCursor;
  } while (cursor);
  return items;
}

describe('categories, users and audit log', () => {
  let server: TestServer;
  let org: OrgFixture;
  let api: ReturnType<typeof client>;
  let keyId: string;

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    await createCategory(server.ctx, operatorCaller(), org.orgId, { name: 'Active Threat', color: '#880E4F', severity: 5, responseLevel: 'lockdown' });
    await createCategory(server.ctx, operatorCaller(), org.orgId, { name: 'Hold', color: '#FBC02D', severity: 2, responseLevel: 'hold' });
    for (const [f, l] of [
      ['Grace', 'Hopper'],
      ['Ada', 'Lovelace'],
      ['Alan', 'Turing'],
      ['Barbara', 'Liskov'],
      ['Anita', 'Borg'],
    ]) {
      await addUser(server.ctx, org.orgId, f!, l!);
    }
    const key = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, name: 'dir key' });
    keyId = key.id;
    api = client(server.base, key.key);
  });
  after(() => server.close());

  it('lists categories by severity descending then name, across pages', async () => {
    const items = await collect(api, `/orgs/${org.orgId}/emergencies/categories`, 2);
    assert.deepEqual(
      items.map((c) => [c.name, c.severity]),
      [
        ['Active Threat', 5],
        ['Fire', 5],
        ['Medical', 3],
        ['Hold', 2],
        ['Uncategorized', 0],
      ],
    );
    const uncategorized = items.find((c) => c.name === 'Uncategorized');
    assert.equal(uncategorized.isSystem, true);
    assert.equal(uncategorized.responseLevel, 'none');
    const fire = items.find((c) => c.name === 'Fire');
    assert.deepEqual(Object.keys(fire).sort(), ['ackDeadlineSeconds', 'categoryId', 'color', 'createdAt', 'isSystem', 'name', 'responseLevel', 'severity']);
    assert.equal(fire.categoryId, org.categories.Fire);
    assert.equal(fire.isSystem, false);
    assert.match(fire.createdAt, /Z$/);
  });

  it('lists users by last name, first name with their organization tree', async () => {
    const items = await collect(api, `/orgs/${org.orgId}/users`, 2);
    assert.deepEqual(
      items.map((u) => u.lastName),
      ['Borg', 'Hopper', 'Liskov', 'Lovelace', 'Turing'],
    );
    const u = items[0];
    assert.equal(u.firstName, 'Anita');
    assert.equal(u.email, 'anita.borg@example.test');
    assert.equal(u.role, 'user');
    assert.equal(u.enterpriseId, org.enterpriseId);
    assert.equal(u.partnerId, org.partnerId);
    assert.ok(u.enterpriseName && u.partnerName);
    for (const field of ['userId', 'accessLevel', 'status', 'profilePhotoUrl', 'ownedDeviceId', 'ownedDeviceName', 'phoneNumber', 'createdAt', 'lastLoginAt']) {
      assert.ok(field in u, field);
    }
  });

  it('does not list the users of another org', async () => {
    const other = await createOrgTree(server.ctx);
    await addUser(server.ctx, other.orgId, 'Other', 'Person');
    const items = await collect(api, `/orgs/${org.orgId}/users`, 50);
    assert.ok(!items.some((u) => u.lastName === 'Person'));
  });

  it('audits every transition with actor, resource and request id, newest first, with filters', async () => {
    const path = `/orgs/${org.orgId}/emergencies`;
    const declared = await api.post(path, { declaredBy: { id: 'p-1', name: 'Pat' } }, { 'x-request-id': 'audit-declare' });
    await api.patch(`${path}/${declared.body.emergencyId}`, { categoryName: 'Fire' }, { 'x-request-id': 'audit-patch' });
    await api.post(`${path}/${declared.body.emergencyId}/resolutions`, {}, { 'x-request-id': 'audit-resolve' });
    const res = await api.get(`/orgs/${org.orgId}/audit-logs?eventCategory=emergency`);
    assert.equal(res.status, 200);
    const mine = res.body.items.filter((e: any) => e.resource.id === declared.body.emergencyId);
    assert.deepEqual(
      mine.map((e: any) => [e.eventType, e.requestId]),
      [
        ['emergency.resolved', 'audit-resolve'],
        ['emergency.categorized', 'audit-patch'],
        ['emergency.declared', 'audit-declare'],
      ],
    );
    for (const entry of mine) {
      assert.deepEqual(entry.actor, { type: 'api_key', id: keyId, name: 'dir key' });
      assert.deepEqual(entry.resource, { type: 'emergency', id: declared.body.emergencyId });
      assert.equal(entry.orgId, org.orgId);
      assert.equal(entry.eventCategory, 'emergency');
      assert.match(entry.auditLogId, /^[0-9a-f-]{36}$/);
    }
    const onlyResolved = await api.get(`/orgs/${org.orgId}/audit-logs?eventCategory=emergency&eventType=emergency.resolved`);
    assert.ok(onlyResolved.body.items.every((e: any) => e.eventType === 'emergency.resolved'));
    const byActor = await api.get(`/orgs/${org.orgId}/audit-logs?actorId=${keyId}`);
    assert.ok(byActor.body.items.length >= 3);
    const nobody = await api.get(`/orgs/${org.orgId}/audit-logs?actorId=nobody`);
    assert.deepEqual(nobody.body.items, []);
    const future = await api.get(`/orgs/${org.orgId}/audit-logs?since=2999-01-01T00:00:00Z`);
    assert.deepEqual(future.body.items, []);
    const past = await api.get(`/orgs/${org.orgId}/audit-logs?until=2000-01-01T00:00:00Z`);
    assert.deepEqual(past.body.items, []);
  });

  it('audits key creation for the orgs the key covers', async () => {
    const res = await api.get(`/orgs/${org.orgId}/audit-logs?eventCategory=api_key&eventType=api_key.created`);
    assert.ok(res.body.items.some((e: any) => e.resource.id === keyId && e.actor.type === 'operator'));
  });

  it('pages the audit log without duplicates', async () => {
    const all = await collect(api, `/orgs/${org.orgId}/audit-logs`, 2);
    assert.equal(new Set(all.map((e) => e.auditLogId)).size, all.length);
    const times = all.map((e) => e.occurredAt);
    assert.deepEqual(times, [...times].sort().reverse());
  });

  it('requires eventCategory with eventType and validates the window', async () => {
    const res = await api.get(`/orgs/${org.orgId}/audit-logs?eventType=emergency.declared`);
    assert.equal(res.status, 422);
    assert.deepEqual(res.body.detail[0].loc, ['query', 'eventType']);
    const bad = await api.get(`/orgs/${org.orgId}/audit-logs?since=yesterday`);
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['query', 'since']);
  });

  it('rejects a page size out of range for every list', async () => {
    for (const path of [`/orgs/${org.orgId}/users`, `/orgs/${org.orgId}/emergencies/categories`, `/orgs/${org.orgId}/audit-logs`]) {
      const res = await api.get(`${path}?limit=500`);
      assert.equal(res.status, 422, path);
      assert.deepEqual(res.body.detail[0].loc, ['query', 'limit']);
    }
  });
});
