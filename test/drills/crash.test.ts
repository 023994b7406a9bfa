import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { newRun } from '../../src/domain/drills/runs.js';
import { createDrill } from '../../src/domain/drills/service.js';
import { eventually, feedOf, sleep } from '../deadlines/support.js';
import { type ChildServer, spawnServer } from '../helpers/child-server.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { runsOf, shortSchedule } from './support.js';

/**
 * Drills are timers in the database: a server SIGKILLed while a run is under way completes it after the restart, each
 * scheduled time runs once across the kills, and a run claimed by a process that died before declaring it is declared.
 */
describe('drills across a SIGKILL', () => {
  const database = freshDatabaseUrl();
  let orgId = '';
  let key = '';
  let adminKey = '';
  let scheduled = { drillId: '', times: [] as string[] };
  let strandedRunId = '';
  let server: ChildServer | null = null;
  const start = () => spawnServer({ DATABASE_URL: database.url });
  const org = () => ({
    orgId,
    api: client(`${server!.url}/api/public/v1`, key),
    admin: client(`${server!.url}/api/admin/v1`, adminKey),
  });

  before(async () => {
    const ctx = createContext(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }));
    await migrateToLatest(ctx.db);
    orgId = (await createOrgTree(ctx)).orgId;
    key = (await mintKey(ctx, { subjectType: 'org', subjectId: orgId })).key;
    adminKey = (await createAdminKey(ctx, operatorCaller(), { name: 'crash', subject: { type: 'instance' } })).key;
    const { schedule, times } = shortSchedule(8, 14, 2);
    const drill = await createDrill(ctx, operatorCaller(), orgId, { name: 'Scheduled', schedule, ackDeadlineSeconds: 5, resolveAfterSeconds: 6 });
    scheduled = { drillId: drill.drillId, times };
    // Claimed by a process that was killed before it declared the exercise: the claim is all there is.
    const onDemand = await createDrill(ctx, operatorCaller(), orgId, { name: 'Stranded', ackDeadlineSeconds: 5, resolveAfterSeconds: 5 });
    const now = new Date().toISOString();
    const stranded = newRun({ id: onDemand.drillId, org_id: orgId }, now, now);
    await ctx.db.db.insertInto('drill_runs').values(stranded).execute();
    strandedRunId = stranded.id;
    await ctx.db.close();
  });

  after(async () => {
    await server?.kill();
    await database.drop();
  });

  it('each occurrence runs once, and a run under way at the kill completes after the restart', async () => {
    server = await start();
    // Killed while the first occurrence's exercise is out, before its resolve.
    await eventually('the first occurrence running', async () => (await runsOf(org(), scheduled.drillId)).some((r) => r.status === 'running'), 20_000, 100);
    await server.kill();
    server = await start();
    const runs = await eventually(
      'both occurrences completed',
      async () => {
        const found = await runsOf(org(), scheduled.drillId);
        return found.length === 2 && found.every((r) => r.status === 'completed') ? found : null;
      },
      40_000,
      250,
    );
    assert.deepEqual(runs.map((r) => r.scheduledFor).sort(), scheduled.times);

    // Killed and started again once they completed: nothing runs or completes twice.
    await server.kill();
    server = await start();
    await sleep(3_000);
    assert.equal((await runsOf(org(), scheduled.drillId)).length, 2);
    const completed = await feedOf(org(), 'drill.completed');
    const declared = await feedOf(org(), 'emergency.declared');
    const resolved = await feedOf(org(), 'emergency.resolved');
    assert.equal(completed.length, 3, 'one drill.completed per run: two scheduled, one stranded');
    assert.equal(declared.length, 3, 'one exercise per run');
    assert.equal(resolved.length, 3);
    const stranded = completed.find((i) => i.event.data.runId === strandedRunId);
    assert.ok(stranded, 'the stranded run was declared and completed');
    assert.equal(stranded.event.data.status, 'completed');
  });
});
