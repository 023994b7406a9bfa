import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { client } from '../helpers/http.js';
import { type OrgFixture, startOrgServer, type TestServer } from '../helpers/server.js';

// extensions.md §1: a misspelt field is a 422 at that field, never a silently different write.
describe('strict write bodies', () => {
  let server: TestServer;
  let org: OrgFixture;
  let api: ReturnType<typeof client>;
  let path: string;

  before(async () => {
    ({ server, org, api } = await startOrgServer());
    path = `/orgs/${org.orgId}/emergencies`;
  });
  after(() => server.close());

  const count = async () => (await api.get(`${path}?limit=200`)).body.items.length as number;
  const refusedAt = (res: { status: number; body: any }, loc: (string | number)[]) => {
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.deepEqual(res.body.detail, [{ loc, msg: 'Extra inputs are not permitted', type: 'extra_forbidden' }]);
  };

  it('declare: unknown top-level, location and declaredBy fields; nothing is declared', async () => {
    const before = await count();
    refusedAt(await api.post(path, { catgoryName: 'Fire' }), ['body', 'catgoryName']);
    refusedAt(await api.post(path, { categoryName: 'Fire', location: { floorId: 'F2', flor: 3 } }), ['body', 'location', 'flor']);
    refusedAt(await api.post(path, { declaredBy: { id: 'u1', name: 'Jane', role: 'x' } }), ['body', 'declaredBy', 'role']);
    assert.equal(await count(), before);
  });

  it('metadata stays free-form', async () => {
    const res = await api.post(path, { categoryName: 'Fire', metadata: { anything: { goes: [1, 'two'] }, catgoryName: 'kept' } });
    assert.equal(res.status, 201);
    assert.deepEqual(res.body.metadata, { anything: { goes: [1, 'two'] }, catgoryName: 'kept' });
    assert.equal(res.body.category.name, 'Fire');
  });

  it('PATCH and resolution: unknown fields are refused and change nothing', async () => {
    const id = (await api.post(path, {})).body.emergencyId;
    refusedAt(await api.patch(`${path}/${id}`, { categoryName: 'Fire', status: 'resolved' }), ['body', 'status']);
    refusedAt(await api.post(`${path}/${id}/resolutions`, { note: 'typo of resolutionNote' }), ['body', 'note']);
    refusedAt(await api.post(`${path}/${id}/resolutions`, { resolvedBy: { id: 'u', name: 'n', email: 'e' } }), ['body', 'resolvedBy', 'email']);
    const read = await api.get(`${path}/${id}`);
    assert.equal(read.body.status, 'declared');
    const resolved = await api.post(`${path}/${id}/resolutions`, { resolutionNote: 'done' });
    assert.equal(resolved.status, 201);
    assert.equal(resolved.body.resolutionNote, 'done');
  });

  it('the OpenAPI document describes itself', async () => {
    const doc = await (await fetch(`${server.base}/openapi.json`)).json();
    const op = doc.paths['/openapi.json'].get;
    assert.equal(op.operationId, 'getOpenApiDocument');
    assert.deepEqual(op.security, []);
    assert.ok(op.responses['200']);
  });
});
