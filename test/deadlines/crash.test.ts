import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { updateOrg } from '../../src/domain/orgs/service.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { type ChildServer, spawnServer } from '../helpers/child-server.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { eventually, feedOf, sleep } from './support.js';

const OVERDUE = 'emergency.delivery_overdue';

/**
 * Deadlines live in the database: one pending when the process is SIGKILLed fires after the next
 * start, once, and a restart after it fired does not fire it again.
 */
describe('acknowledgement deadlines across a SIGKILL', () => {
  const database = freshDatabaseUrl();
  let orgId = '';
  let key = '';
  let server: ChildServer | null = null;
  const start = () => spawnServer({ DATABASE_URL: database.url });

  before(async () => {
    const ctx = createContext(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }));
    await migrateToLatest(ctx.db);
    const org = await createOrgTree(ctx);
    orgId = org.orgId;
    key = (await mintKey(ctx, { subjectType: 'org', subjectId: orgId })).key;
    await updateOrg(ctx, operatorCaller(), orgId, { ackDeadlineSeconds: 5 });
    // Registered and never connected: silent.
    await createDevice(ctx, operatorCaller(), orgId, { name: 'Silent station' });
    await ctx.db.close();
  });

  after(async () => {
    await server?.kill();
    await database.drop();
  });

  it('a deadline pending at the kill fires within 5 s of the restart, once', async () => {
    server = await start();
    const api = () => client(`${server!.url}/api/public/v1`, key);
    const declaredAt = Date.now();
    const declared = await api().post(`/orgs/${orgId}/emergencies`, { description: 'pending at the kill' });
    assert.equal(declared.status, 201);
    await server.kill();

    // Down past the deadline: it is due the moment the next process starts.
    await sleep(Math.max(0, declaredAt + 6_000 - Date.now()));
    server = await start();
    const startedAt = Date.now();
    const [overdue] = await eventually('the overdue event after the restart', async () => {
      const items = await feedOf({ api: api(), orgId }, OVERDUE);
      return items.length > 0 ? items : null;
    });
    const firedAfter = Date.parse(overdue.event.createdAt) - startedAt;
    assert.ok(firedAfter <= 5_000, `fired ${firedAfter} ms after the restarted server answered`);
    assert.equal(overdue.event.emergencyId, declared.body.emergencyId);
    assert.deepEqual(
      overdue.event.data.silentDevices.map((d: { name: string }) => d.name),
      ['Silent station'],
    );

    // Killed and started again once it fired: it stays fired.
    await server.kill();
    server = await start();
    await sleep(3_000);
    assert.equal((await feedOf({ api: api(), orgId }, OVERDUE)).length, 1, 'one overdue event, across both restarts');
  });
});
