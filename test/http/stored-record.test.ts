import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Migrator } from 'kysely';
import { migrateToLatest } from '../../src/db/migrate.js';
import { migrations } from '../../src/db/migrations/index.js';
import type { client } from '../helpers/http.js';
import { createOrgTree, orgApi, type OrgFixture, startOrgServer, type TestServer } from '../helpers/server.js';

// Every read answers from the record stored with each change (migrations 0007 and 0008). These check
// that what it answers is always the emergency's current state, however the row came to be.
describe('stored emergency records', () => {
  let server: TestServer;
  let org: OrgFixture;
  let api: ReturnType<typeof client>;
  let path: string;

  before(async () => {
    ({ server, org, api } = await startOrgServer());
    path = `/orgs/${org.orgId}/emergencies`;
  });
  after(() => server.close());

  it('GET answers what each write answered, through declare, re-categorize and resolve', async () => {
    const declared = await api.post(path, { description: 'Water leak', location: { floorId: 'B1' }, metadata: { sensor: 7 } });
    assert.equal(declared.status, 201);
    const read = await api.get(`${path}/${declared.body.emergencyId}`);
    assert.equal(read.status, 200);
    assert.match(String(read.headers.get('content-type')), /^application\/json/);
    assert.deepEqual(read.body, declared.body);

    const recategorized = await api.patch(`${path}/${declared.body.emergencyId}`, { categoryName: 'Medical' });
    assert.equal(recategorized.status, 200);
    assert.deepEqual((await api.get(`${path}/${declared.body.emergencyId}`)).body, recategorized.body);
    assert.equal(recategorized.body.category.name, 'Medical');

    const resolved = await api.post(`${path}/${declared.body.emergencyId}/resolutions`, { resolutionNote: 'Valve closed' });
    assert.equal(resolved.status, 201);
    const final = await api.get(`${path}/${declared.body.emergencyId}`);
    assert.deepEqual(final.body, resolved.body);
    assert.equal(final.body.status, 'resolved');
    assert.equal(final.body.resolutionNote, 'Valve closed');
  });

  it('rebuilds, when migrating, the record of a row changed without it (an instance older than the record)', async () => {
    const declared = await api.post(path, { description: 'before' });
    await server.ctx.db.db
      .updateTable('emergencies')
      .set((eb) => ({ description: 'changed by an older instance', sequence: eb('sequence', '+', 1) }))
      .where('id', '=', declared.body.emergencyId)
      .execute();
    const migrator = new Migrator({
      db: server.ctx.db.db,
      provider: { getMigrations: async () => migrations },
      ...(server.ctx.db.pgSchema ? { migrationTableSchema: server.ctx.db.pgSchema } : {}),
    });
    assert.equal((await migrator.migrateTo('0007_emergency_record')).error, undefined);
    assert.equal((await migrateToLatest(server.ctx.db))[0], '0008_records_only');
    const read = await api.get(`${path}/${declared.body.emergencyId}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.description, 'changed by an older instance');
    assert.deepEqual({ ...read.body, description: 'before' }, declared.body);
    // Lists too: the rebuilt row among current ones, in order, with the page cursor intact.
    const after = await api.post(path, { description: 'after' });
    const page = await api.get(`${path}?limit=2`);
    assert.equal(page.status, 200);
    assert.deepEqual(
      page.body.items.map((e: { emergencyId: string }) => e.emergencyId),
      [after.body.emergencyId, declared.body.emergencyId],
    );
    assert.equal(page.body.items[1].description, 'changed by an older instance');
    assert.deepEqual(page.body.items[0], after.body);
    assert.equal(typeof page.body.nextCursor, 'string');
    const rest = await api.get(`${path}?limit=200&cursor=${page.body.nextCursor}`);
    assert.equal(rest.status, 200);
    assert.equal(rest.body.nextCursor, null);
    assert.ok(!rest.body.items.some((e: { emergencyId: string }) => e.emergencyId === after.body.emergencyId || e.emergencyId === declared.body.emergencyId));
  });

  it('gives emergencies that existed before the column their record when migrating', async () => {
    const other = await createOrgTree(server.ctx);
    const otherApi = await orgApi(server, other.orgId);
    const otherPath = `/orgs/${other.orgId}/emergencies`;
    const kept = await otherApi.post(otherPath, { description: 'kept', categoryName: 'Fire' });
    const resolved = await otherApi.post(`${otherPath}/${kept.body.emergencyId}/resolutions`, { resolutionNote: 'out' });
    const plain = await otherApi.post(otherPath, { externalId: 'pre-0007' });

    const migrator = new Migrator({
      db: server.ctx.db.db,
      provider: { getMigrations: async () => migrations },
      ...(server.ctx.db.pgSchema ? { migrationTableSchema: server.ctx.db.pgSchema } : {}),
    });
    const down = await migrator.migrateTo('0006_lean_indexes');
    assert.equal(down.error, undefined);
    assert.deepEqual((await migrateToLatest(server.ctx.db)).slice(0, 2), ['0007_emergency_record', '0008_records_only']);

    const stored = await server.ctx.db.db
      .selectFrom('emergencies')
      .select(['id', 'record', 'record_sequence', 'sequence'])
      .where('org_id', '=', other.orgId)
      .execute();
    assert.equal(stored.length, 2);
    for (const row of stored) assert.equal(Number(row.record_sequence), Number(row.sequence));
    assert.deepEqual((await otherApi.get(`${otherPath}/${kept.body.emergencyId}`)).body, resolved.body);
    assert.deepEqual((await otherApi.get(`${otherPath}/${plain.body.emergencyId}`)).body, plain.body);
  });
});
