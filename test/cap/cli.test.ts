import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { adminCliModes, jsonCli, runCli } from '../helpers/cli.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';
import { example, postCap } from './support.js';

/** `emergency-api admin cap-mapping set|list|delete`, on the database (as the operator) and over the admin API. */
describe('admin CLI: CAP event mappings', () => {
  let server: TestServer;
  let org: OrgFixture;
  let adminKey: string;
  const cwd = mkdtempSync(join(tmpdir(), 'emergency-api-cap-cli-'));
  const modes = adminCliModes(() => ({ databaseUrl: server.databaseUrl, url: server.url, adminKey }));

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    adminKey = (await createAdminKey(server.ctx, operatorCaller(), { name: 'cli', subject: { type: 'instance' } })).key;
  });
  after(async () => {
    await server.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  for (const [mode, env] of Object.entries(modes)) {
    it(`sets, lists and deletes a mapping (${mode}); ingested alerts follow it`, async () => {
      const cli = jsonCli(env(), cwd);
      const event = `Severe Thunderstorm (${mode})`;
      const set = await cli('admin', 'cap-mapping', 'set', '--org', org.orgId, '--event', event, '--category', 'Medical');
      assert.deepEqual([set.event, set.categoryName, set.categoryId], [event, 'Medical', org.categories.Medical]);
      const replaced = await cli('admin', 'cap-mapping', 'set', '--org', org.orgId, '--event', event.toUpperCase(), '--category-id', org.categories.Fire!);
      assert.deepEqual([replaced.mappingId, replaced.categoryName], [set.mappingId, 'Fire']);
      const list = await cli('admin', 'cap-mapping', 'list', '--org', org.orgId);
      assert.ok(list.items.some((m: { mappingId: string; event: string }) => m.mappingId === set.mappingId && m.event === event.toUpperCase()));

      const key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
      const alert = example('a2-severe-thunderstorm-warning')
        .replace('<event>SEVERE THUNDERSTORM</event>', `<event>${event}</event>`)
        .replace('KSTO1055887203', `cli-${mode.replace(' ', '-')}`);
      assert.equal((await postCap(server.base, key, org.orgId, alert)).body.category.name, 'Fire');

      assert.deepEqual(await cli('admin', 'cap-mapping', 'delete', set.mappingId, '--org', org.orgId), { mappingId: set.mappingId, deleted: true });
      assert.ok(!(await cli('admin', 'cap-mapping', 'list', '--org', org.orgId)).items.some((m: { mappingId: string }) => m.mappingId === set.mappingId));
    });
  }

  it('names what is wrong: a missing option, an unknown category', async () => {
    const missing = await runCli(['admin', 'cap-mapping', 'set', '--org', org.orgId, '--category', 'Fire'], modes.database(), { cwd });
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /--event/);
    const unknown = await runCli(['admin', 'cap-mapping', 'set', '--org', org.orgId, '--event', 'x', '--category', 'Nope'], modes['admin API'](), { cwd });
    assert.equal(unknown.code, 1, unknown.stderr);
    assert.match(unknown.stderr, /categoryName/);
  });
});
