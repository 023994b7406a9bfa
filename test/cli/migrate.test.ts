import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { migrations } from '../../src/db/migrations/index.js';
import { runCli } from '../helpers/cli.js';
import { freshDatabaseUrl } from '../helpers/db.js';

const ALL = Object.keys(migrations);

describe('CLI migrate', () => {
  it('names the migrations it applied, then says the database is up to date', async () => {
    const database = freshDatabaseUrl();
    try {
      const env = { DATABASE_URL: database.url };
      const first = await runCli(['migrate'], env);
      assert.equal(first.code, 0, first.stderr);
      assert.equal(first.stderr, '');
      assert.equal(first.stdout, `Applied ${ALL.length} migrations:\n${ALL.map((name) => `  ${name}\n`).join('')}`);

      const again = await runCli(['migrate'], env);
      assert.equal(again.code, 0, again.stderr);
      assert.equal(again.stdout, `Database already up to date (${ALL.length} migrations applied).\n`);
      assert.deepEqual((await runCli(['migrate', '--json'], env)).json, { applied: [] });
    } finally {
      await database.drop();
    }
  });

  it('with --json: {"applied":[names]} of a fresh database, in order', async () => {
    const database = freshDatabaseUrl();
    try {
      const res = await runCli(['migrate', '--json'], { DATABASE_URL: database.url });
      assert.equal(res.code, 0, res.stderr);
      assert.deepEqual(res.json, { applied: ALL });
      assert.equal(res.stderr, '');
    } finally {
      await database.drop();
    }
  });

  it('an admin command migrates a fresh database first and says so on stderr; migrate then has nothing left to apply', async () => {
    const database = freshDatabaseUrl();
    try {
      const env = { DATABASE_URL: database.url };
      const partner = await runCli(['admin', 'partner', 'create', '--name', 'First'], env);
      assert.equal(partner.code, 0, partner.stderr);
      assert.match(partner.stdout, /^id: [0-9a-f-]{36}\n$/);
      assert.equal(partner.stderr, `note: applied ${ALL.length} pending database migration(s) first\n`);
      const migrate = await runCli(['migrate', '--json'], env);
      assert.deepEqual(migrate.json, { applied: [] });

      // With --json, stdout is the one object and stderr stays empty.
      const other = freshDatabaseUrl();
      try {
        const json = await runCli(['admin', 'partner', 'create', '--name', 'Second', '--json'], { DATABASE_URL: other.url });
        assert.equal(json.code, 0, json.stderr);
        assert.deepEqual(Object.keys(json.json), ['id']);
        assert.equal(json.stderr, '');
      } finally {
        await other.drop();
      }
    } finally {
      await database.drop();
    }
  });
});
