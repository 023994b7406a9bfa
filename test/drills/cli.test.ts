import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { eventually } from '../deadlines/support.js';
import { adminCliModes, jsonCli, runCli } from '../helpers/cli.js';
import { createOrgTree, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** `emergency-api admin drill create|list|run|runs|delete`, on the database (as the operator) and over the admin API. */
describe('admin CLI: drills', () => {
  let server: TestServer;
  let org: OrgFixture;
  let adminKey: string;
  const cwd = mkdtempSync(join(tmpdir(), 'emergency-api-drill-cli-'));
  const modes = adminCliModes(() => ({ databaseUrl: server.databaseUrl, url: server.url, adminKey }));

  before(async () => {
    server = await startTestServer({}, { drills: { pollIntervalMs: 200 } });
    org = await createOrgTree(server.ctx);
    adminKey = (await createAdminKey(server.ctx, operatorCaller(), { name: 'cli', subject: { type: 'instance' } })).key;
  });
  after(async () => {
    await server.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  for (const [mode, env] of Object.entries(modes)) {
    it(`creates, lists, runs and deletes a drill (${mode})`, async () => {
      const cli = jsonCli(env(), cwd);
      const name = `Monthly siren test (${mode})`;
      const created = await cli(
        'admin',
        'drill',
        'create',
        '--org',
        org.orgId,
        '--name',
        name,
        '--schedule',
        'FREQ=MONTHLY;BYDAY=1MO;BYHOUR=10;BYMINUTE=0;BYSECOND=0',
        '--ack-deadline',
        '5',
        '--resolve-after',
        '5',
      );
      assert.equal(created.name, name);
      assert.match(created.nextRunAt, /T10:00:00\.000Z$/);
      const list = await cli('admin', 'drill', 'list', '--org', org.orgId);
      assert.ok(list.items.some((d: { drillId: string }) => d.drillId === created.drillId));
      const run = await cli('admin', 'drill', 'run', created.drillId, '--org', org.orgId);
      assert.equal(run.drillId, created.drillId);
      // The server's worker resolves it and takes the report.
      const runs = await eventually(
        'the run completed',
        async () => {
          const found = await cli('admin', 'drill', 'runs', created.drillId, '--org', org.orgId);
          return found.items[0]?.status === 'completed' ? found.items : null;
        },
        20_000,
        300,
      );
      assert.equal(runs[0].runId, run.runId);
      assert.equal(runs[0].passed, true);
      assert.deepEqual(await cli('admin', 'drill', 'delete', created.drillId, '--org', org.orgId), { drillId: created.drillId, deleted: true });
      assert.ok(!(await cli('admin', 'drill', 'list', '--org', org.orgId)).items.some((d: { drillId: string }) => d.drillId === created.drillId));
    });
  }

  it('names what is wrong: a bad schedule, a missing deadline', async () => {
    const bad = await runCli(
      ['admin', 'drill', 'create', '--org', org.orgId, '--name', 'Bad', '--ack-deadline', '30', '--schedule', 'EVERY MONDAY'],
      modes.database(),
      { cwd },
    );
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /schedule/);
    const missing = await runCli(['admin', 'drill', 'create', '--org', org.orgId, '--name', 'Bad'], modes.database(), { cwd });
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /ack-deadline/);
  });
});
