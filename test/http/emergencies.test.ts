import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

describe('emergencies over REST', () => {
  let server: TestServer;
  let org: OrgFixture;
  let api: ReturnType<typeof client>;
  let keyId: string;
  let path: string;

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    const key = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, name: 'integration key' });
    keyId = key.id;
    api = client(server.base, key.key);
    path = `/orgs/${org.orgId}/emergencies`;
  });
  after(() => server.close());

  const eventsOf = (emergencyId: string) =>
    server.ctx.db.db.selectFrom('events').selectAll().where('emergency_id', '=', emergencyId).orderBy('sequence').execute();

  describe('declare', () => {
    it('defaults to Uncategorized, the key as actor and now as occurredAt', async () => {
      const before = Date.now();
      const res = await api.post(path, {});
      assert.equal(res.status, 201);
      const e = res.body;
      assert.match(e.emergencyId, /^[0-9a-f-]{36}$/);
      assert.equal(e.orgId, org.orgId);
      assert.equal(e.status, 'declared');
      assert.equal(e.category.name, 'Uncategorized');
      assert.equal(e.category.severity, 0);
      assert.match(e.category.color, /^#[0-9A-F]{6}$/);
      assert.deepEqual(e.declaredBy, { type: 'api_key', id: keyId, name: 'integration key' });
      assert.match(e.occurredAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.ok(Date.parse(e.occurredAt) >= before - 5);
      assert.equal(e.resolvedAt, null);
      assert.equal(e.externalId, null);
    });

    it('stores every field and returns it on read', async () => {
      const body = {
        externalId: 'inc-full-1',
        categoryId: org.categories.Fire,
        source: 'fire-panel',
        description: 'Smoke detected in lab 2',
        occurredAt: '2026-11-21T18:44:29.5+01:00',
        location: { latitude: 48.85, longitude: 2.35, floorId: 'F2' },
        metadata: { panel: 'A7', zones: [1, 2] },
        declaredBy: { id: 'u-17', name: 'Jane Doe' },
      };
      const res = await api.post(path, body);
      assert.equal(res.status, 201);
      assert.equal(res.body.occurredAt, '2026-11-21T17:44:29.500Z');
      assert.deepEqual(res.body.category, { id: org.categories.Fire, name: 'Fire', color: '#D32F2F', severity: 5 });
      assert.deepEqual(res.body.declaredBy, { type: 'user', id: 'u-17', name: 'Jane Doe' });
      const read = await api.get(`${path}/${res.body.emergencyId}`);
      assert.equal(read.status, 200);
      assert.deepEqual(read.body, res.body);
      assert.deepEqual(read.body.location, { latitude: 48.85, longitude: 2.35, floorId: 'F2' });
      assert.deepEqual(read.body.metadata, { panel: 'A7', zones: [1, 2] });
    });

    it('selects the category by name, ignoring case', async () => {
      const res = await api.post(path, { categoryName: 'mEdIcAl' });
      assert.equal(res.status, 201);
      assert.equal(res.body.category.id, org.categories.Medical);
      assert.equal(res.body.category.color, '#1976D2');
    });

    it('rejects unknown categories with 422 category_not_found on the field', async () => {
      for (const [field, value] of [
        ['categoryId', '00000000-0000-4000-8000-000000000000'],
        ['categoryId', 'not-a-uuid'],
        ['categoryName', 'Alien invasion'],
      ] as const) {
        const res = await api.post(path, { [field]: value });
        assert.equal(res.status, 422, `${field}=${value}`);
        assert.deepEqual(res.body.detail[0].loc, ['body', field]);
        assert.equal(res.body.detail[0].type, 'category_not_found');
      }
    });

    it("rejects another org's category id", async () => {
      const other = await createOrgTree(server.ctx);
      const res = await api.post(path, { categoryId: other.categories.Fire });
      assert.equal(res.status, 422);
      assert.equal(res.body.detail[0].type, 'category_not_found');
    });

    it('answers a reused externalId with 409 and the existing id, creating nothing and emitting nothing', async () => {
      const first = await api.post(path, { externalId: 'dup-1' });
      assert.equal(first.status, 201);
      const offsetBefore = (await server.ctx.db.db.selectFrom('orgs').select('event_offset').where('id', '=', org.orgId).executeTakeFirstOrThrow())
        .event_offset;
      const second = await api.post(path, { externalId: 'dup-1', description: 'retry' });
      assert.equal(second.status, 409);
      assert.equal(second.body.detail.error, 'external_id_conflict');
      assert.equal(second.body.detail.emergencyId, first.body.emergencyId);
      const list = await api.get(`${path}?externalId=dup-1`);
      assert.equal(list.body.items.length, 1);
      const offsetAfter = (await server.ctx.db.db.selectFrom('orgs').select('event_offset').where('id', '=', org.orgId).executeTakeFirstOrThrow()).event_offset;
      assert.equal(offsetAfter, offsetBefore);
    });

    it('lets concurrent declares with one externalId create exactly one emergency', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, () => api.post(path, { externalId: 'race-1' })));
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
      const created = results.find((r) => r.status === 201)!;
      for (const r of results.filter((x) => x.status === 409)) assert.equal(r.body.detail.emergencyId, created.body.emergencyId);
    });

    it('allows the same externalId in two organizations', async () => {
      const other = await createOrgTree(server.ctx);
      const otherKey = await mintKey(server.ctx, { subjectType: 'org', subjectId: other.orgId });
      assert.equal((await api.post(path, { externalId: 'shared-ext' })).status, 201);
      assert.equal((await client(server.base, otherKey.key).post(`/orgs/${other.orgId}/emergencies`, { externalId: 'shared-ext' })).status, 201);
    });

    it('writes the declared event with sequence 1 and the envelope of the record', async () => {
      const res = await api.post(path, { categoryName: 'Fire' });
      const events = await eventsOf(res.body.emergencyId);
      assert.equal(events.length, 1);
      const envelope = JSON.parse(events[0]!.payload);
      assert.equal(envelope.eventType, 'emergency.declared');
      assert.equal(envelope.apiVersion, '1.0.0');
      assert.equal(envelope.sequence, 1);
      assert.equal(envelope.orgId, org.orgId);
      assert.equal(envelope.emergencyId, res.body.emergencyId);
      assert.deepEqual(envelope.data.emergency, res.body);
    });
  });

  describe('recategorize', () => {
    it('moves declared → categorized, emits once, and treats the same category again as a no-op', async () => {
      const declared = await api.post(path, {});
      const id = declared.body.emergencyId;
      const misspelt = await api.patch(`${path}/${id}`, { categoryName: 'Fire', description: 'not a PATCH field' });
      assert.equal(misspelt.status, 422);
      assert.deepEqual(
        misspelt.body.detail.map((d: { loc: unknown }) => d.loc),
        [['body', 'description']],
      );
      const first = await api.patch(`${path}/${id}`, { categoryName: 'Fire' });
      assert.equal(first.status, 200);
      assert.equal(first.body.status, 'categorized');
      assert.equal(first.body.category.name, 'Fire');
      assert.equal(first.body.description, null, 'only the category is persisted');
      const again = await api.patch(`${path}/${id}`, { categoryId: org.categories.Fire });
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, first.body);
      const third = await api.patch(`${path}/${id}`, { categoryId: org.categories.Medical });
      assert.equal(third.body.category.name, 'Medical');
      const events = await eventsOf(id);
      assert.deepEqual(
        events.map((e) => [e.sequence, e.event_type]),
        [
          [1, 'emergency.declared'],
          [2, 'emergency.categorized'],
          [3, 'emergency.categorized'],
        ],
      );
    });

    it('moves a declared emergency to categorized even under its current category', async () => {
      const declared = await api.post(path, {});
      const res = await api.patch(`${path}/${declared.body.emergencyId}`, { categoryName: 'Uncategorized' });
      assert.equal(res.status, 200);
      assert.equal(res.body.status, 'categorized');
      assert.equal((await eventsOf(declared.body.emergencyId)).length, 2);
    });

    it('requires exactly one of categoryId and categoryName', async () => {
      const declared = await api.post(path, {});
      for (const body of [{}, { categoryId: org.categories.Fire, categoryName: 'Fire' }, { description: 'x' }]) {
        const res = await api.patch(`${path}/${declared.body.emergencyId}`, body);
        assert.equal(res.status, 422, JSON.stringify(body));
        assert.equal(res.body.detail[0].loc[0], 'body');
      }
      const unknown = await api.patch(`${path}/${declared.body.emergencyId}`, { categoryName: 'Nope' });
      assert.equal(unknown.status, 422);
      assert.equal(unknown.body.detail[0].type, 'category_not_found');
    });

    it('refuses to change a resolved emergency with 409 emergency_resolved', async () => {
      const declared = await api.post(path, {});
      await api.post(`${path}/${declared.body.emergencyId}/resolutions`, {});
      const res = await api.patch(`${path}/${declared.body.emergencyId}`, { categoryName: 'Fire' });
      assert.equal(res.status, 409);
      assert.equal(res.body.detail.error, 'emergency_resolved');
      assert.equal((await api.get(`${path}/${declared.body.emergencyId}`)).body.category.name, 'Uncategorized');
    });

    it('answers 404 emergency_not_found for unknown ids of any form', async () => {
      for (const id of ['00000000-0000-4000-8000-000000000000', 'nope', '123']) {
        const res = await api.patch(`${path}/${id}`, { categoryName: 'Fire' });
        assert.equal(res.status, 404);
        assert.equal(res.body.detail.error, 'emergency_not_found');
      }
    });
  });

  describe('resolve', () => {
    it('resolves from declared with 201, then returns the same resolution with 200 and no new event', async () => {
      const declared = await api.post(path, {});
      const id = declared.body.emergencyId;
      const body = {
        resolutionNote: 'All clear',
        resolvedAt: '2026-11-21T19:00:00Z',
        resolvedBy: { id: 'u-9', name: 'Sam Lee' },
        metadata: { ticket: 'T-1' },
      };
      const first = await api.post(`${path}/${id}/resolutions`, body);
      assert.equal(first.status, 201);
      assert.equal(first.body.status, 'resolved');
      assert.equal(first.body.resolvedAt, '2026-11-21T19:00:00.000Z');
      assert.deepEqual(first.body.resolvedBy, { type: 'user', id: 'u-9', name: 'Sam Lee' });
      assert.equal(first.body.resolutionNote, 'All clear');
      const second = await api.post(`${path}/${id}/resolutions`, { resolutionNote: 'different' });
      assert.equal(second.status, 200);
      assert.deepEqual(second.body, first.body);
      assert.deepEqual((await api.get(`${path}/${id}`)).body, first.body);
      assert.deepEqual(
        (await eventsOf(id)).map((e) => e.event_type),
        ['emergency.declared', 'emergency.resolved'],
      );
    });

    it('defaults resolvedBy to the key and accepts an empty body', async () => {
      const declared = await api.post(path, {});
      await api.patch(`${path}/${declared.body.emergencyId}`, { categoryName: 'Fire' });
      const res = await api.post(`${path}/${declared.body.emergencyId}/resolutions`);
      assert.equal(res.status, 201);
      assert.deepEqual(res.body.resolvedBy, { type: 'api_key', id: keyId, name: 'integration key' });
      assert.ok(res.body.resolvedAt);
      const events = await eventsOf(declared.body.emergencyId);
      assert.deepEqual(
        events.map((e) => [e.sequence, e.event_type]),
        [
          [1, 'emergency.declared'],
          [2, 'emergency.categorized'],
          [3, 'emergency.resolved'],
        ],
      );
    });

    it('validates the body', async () => {
      const declared = await api.post(path, {});
      const res = await api.post(`${path}/${declared.body.emergencyId}/resolutions`, {
        resolvedAt: 'yesterday',
        resolvedBy: { id: 'x' },
        resolutionNote: 'n'.repeat(4001),
      });
      assert.equal(res.status, 422);
      const locs = res.body.detail.map((d: { loc: string[] }) => d.loc.join('.'));
      assert.ok(locs.includes('body.resolvedAt'));
      assert.ok(locs.includes('body.resolvedBy.name'));
      assert.ok(locs.includes('body.resolutionNote'));
      assert.equal(res.body.detail.find((d: { loc: string[] }) => d.loc.join('.') === 'body.resolvedBy.name').type, 'missing');
      assert.equal((await api.get(`${path}/${declared.body.emergencyId}`)).body.status, 'declared');
    });

    it('lets only one of concurrent resolutions create the resolution', async () => {
      const declared = await api.post(path, {});
      const results = await Promise.all(Array.from({ length: 6 }, () => api.post(`${path}/${declared.body.emergencyId}/resolutions`, {})));
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 201]);
      assert.equal((await eventsOf(declared.body.emergencyId)).length, 2);
    });
  });

  describe('list', () => {
    let listOrg: OrgFixture;
    let listApi: ReturnType<typeof client>;
    let lpath: string;
    const ids: string[] = [];

    before(async () => {
      listOrg = await createOrgTree(server.ctx);
      listApi = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: listOrg.orgId })).key);
      lpath = `/orgs/${listOrg.orgId}/emergencies`;
      for (let i = 0; i < 7; i++) {
        const res = await listApi.post(lpath, {
          externalId: `list-${i}`,
          occurredAt: `2026-01-0${i + 1}T00:00:00Z`,
          categoryName: i % 2 === 0 ? 'Fire' : undefined,
        });
        ids.push(res.body.emergencyId);
      }
      // Two at the same instant: order falls back to emergencyId.
      for (const ext of ['same-a', 'same-b']) {
        const res = await listApi.post(lpath, { externalId: ext, occurredAt: '2026-02-01T00:00:00Z' });
        ids.push(res.body.emergencyId);
      }
      await listApi.patch(`${lpath}/${ids[1]}`, { categoryName: 'Medical' });
      await listApi.post(`${lpath}/${ids[3]}/resolutions`, {});
    });

    it('orders by occurredAt descending then emergencyId, and pages with a keyset cursor', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: any = await listApi.get(`${lpath}?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(res.status, 200);
        assert.ok(res.body.items.length <= 2);
        seen.push(...res.body.items.map((e: { emergencyId: string }) => e.emergencyId));
        cursor = res.body.nextCursor;
        pages++;
      } while (cursor);
      assert.equal(pages, 5);
      assert.equal(seen.length, 9);
      assert.equal(new Set(seen).size, 9);
      const all = (await listApi.get(`${lpath}?limit=200`)).body.items;
      assert.deepEqual(
        seen,
        all.map((e: { emergencyId: string }) => e.emergencyId),
      );
      const keys = all.map((e: { occurredAt: string; emergencyId: string }) => [e.occurredAt, e.emergencyId]);
      const sorted = [...keys].sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? 1 : -1) : a[0] < b[0] ? 1 : -1));
      assert.deepEqual(keys, sorted);
      assert.equal(all[0].occurredAt, '2026-02-01T00:00:00.000Z');
    });

    it('returns nextCursor null on the last page and defaults limit to 50', async () => {
      const res = await listApi.get(lpath);
      assert.equal(res.body.items.length, 9);
      assert.equal(res.body.nextCursor, null);
    });

    it('filters by status, categoryId, externalId and the occurredAt window', async () => {
      const byStatus = async (s: string) => (await listApi.get(`${lpath}?status=${s}`)).body.items.map((e: any) => e.emergencyId).sort();
      assert.deepEqual(await byStatus('categorized'), [ids[1]].sort());
      assert.deepEqual(await byStatus('resolved'), [ids[3]].sort());
      assert.equal((await byStatus('declared')).length, 7);
      const fire = await listApi.get(`${lpath}?categoryId=${listOrg.categories.Fire}`);
      assert.deepEqual(fire.body.items.map((e: any) => e.externalId).sort(), ['list-0', 'list-2', 'list-4', 'list-6']);
      const ext = await listApi.get(`${lpath}?externalId=list-5`);
      assert.deepEqual(
        ext.body.items.map((e: any) => e.emergencyId),
        [ids[5]],
      );
      const window = await listApi.get(`${lpath}?since=2026-01-02T00:00:00Z&until=${encodeURIComponent('2026-01-04T00:00:00+00:00')}`);
      assert.deepEqual(
        window.body.items.map((e: any) => e.externalId),
        ['list-2', 'list-1'],
      );
      const none = await listApi.get(`${lpath}?externalId=missing`);
      assert.deepEqual(none.body, { items: [], nextCursor: null });
    });

    it('rejects bad query parameters with 422 on the query location', async () => {
      const cases: [string, string][] = [
        ['limit=0', 'limit'],
        ['limit=201', 'limit'],
        ['limit=abc', 'limit'],
        ['limit=2.5', 'limit'],
        ['status=open', 'status'],
        ['since=2026-01-01', 'since'],
        ['until=2026-01-01T00:00:00', 'until'],
        ['cursor=%%%', 'cursor'],
        [`cursor=${Buffer.from('{"a":1}').toString('base64url')}`, 'cursor'],
        [`cursor=${Buffer.from('[1,2]').toString('base64url')}`, 'cursor'],
      ];
      for (const [qs, field] of cases) {
        const res = await listApi.get(`${lpath}?${qs}`);
        assert.equal(res.status, 422, qs);
        assert.deepEqual(res.body.detail[0].loc, ['query', field], qs);
      }
    });
  });
});
