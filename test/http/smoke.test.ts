import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, startTestServer, type TestServer } from '../helpers/server.js';

describe('service smoke', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('declares, lists, recategorizes and resolves an emergency', async () => {
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const api = client(server.base, key);
    const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'smoke' });
    assert.equal(declared.status, 201);
    assert.equal(declared.body.category.name, 'Uncategorized');
    const id = declared.body.emergencyId;
    const patched = await api.patch(`/orgs/${org.orgId}/emergencies/${id}`, { categoryName: 'Fire' });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.status, 'categorized');
    const resolved = await api.post(`/orgs/${org.orgId}/emergencies/${id}/resolutions`, { resolutionNote: 'ok' });
    assert.equal(resolved.status, 201);
    assert.equal(resolved.body.status, 'resolved');
    const again = await api.post(`/orgs/${org.orgId}/emergencies/${id}/resolutions`);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, resolved.body);
    const events = await server.ctx.db.db
      .selectFrom('events')
      .select(['sequence', 'event_type', 'stream_offset'])
      .where('emergency_id', '=', id)
      .orderBy('sequence')
      .execute();
    assert.deepEqual(
      events.map((e) => [e.sequence, e.event_type, e.stream_offset]),
      [
        [1, 'emergency.declared', 1],
        [2, 'emergency.categorized', 2],
        [3, 'emergency.resolved', 3],
      ],
    );
  });
});
