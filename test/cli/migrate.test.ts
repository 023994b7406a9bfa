import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { migrations } from '../../src/db/migrations/index.js';
import { runCli } from '../helpers/cli.js';
import { freshDatabaseUrl } from '../helpers/db.js';

const ALL = Object.keys(migrations);

/** The line naming the database on stderr: the URL as given for SQLite, without credentials for PostgreSQL. */
const USING = /^using database (sqlite:\S+|postgres:\/\/[^@\s]+) \(DATABASE_URL\)\n/;

/** A SQLite database file that exists but is empty, as a new installation's would be before migrating; nothing to do on PostgreSQL. */
function emptyDatabaseFile(url: string): void {
  if (url.startsWith('sqlite:')) writeFileSync(url.slice('sqlite:'.length), '');
}

describe('CLI migrate', () => {
  it('names the migrations it applied, then says the database is up to date', async () => {
    const database = freshDatabaseUrl();
    try {
      const env = { DATABASE_URL: database.url };
      const first = await runCli(['migrate'], env);
      assert.equal(first.code, 0, first.stderr);
      // Which database it migrated, on stderr.
      assert.match(first.stderr, USING);
      assert.equal(first.stderr.split('\n').length, 2, first.stderr);
      if (database.dialect === 'sqlite') assert.equal(first.stderr, `using database ${database.url} (DATABASE_URL)\n`);
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
      // stderr: one JSON line naming the database.
      const note = JSON.parse(res.stderr);
      assert.match(`${note.note}\n`, USING);
      assert.equal(note.note, `using database ${note.database} (DATABASE_URL)`);
    } finally {
      await database.drop();
    }
  });

  it('an admin command migrates a fresh database first and says so on stderr; migrate then has nothing left to apply', async () => {
    const database = freshDatabaseUrl();
    try {
      const env = { DATABASE_URL: database.url };
      emptyDatabaseFile(database.url);
      const partner = await runCli(['admin', 'partner', 'create', '--name', 'First'], env);
      assert.equal(partner.code, 0, partner.stderr);
      assert.match(partner.stdout, /^id: [0-9a-f-]{36}\n$/);
      assert.match(partner.stderr, USING);
      assert.ok(partner.stderr.endsWith(`\nnote: applied ${ALL.length} pending database migration(s) first\n`), partner.stderr);
      const migrate = await runCli(['migrate', '--json'], env);
      assert.deepEqual(migrate.json, { applied: [] });

      // With --json, stdout is the one object and stderr stays empty.
      const other = freshDatabaseUrl();
      try {
        emptyDatabaseFile(other.url);
        const json = await runCli(['admin', 'partner', 'create', '--name', 'Second', '--json'], { DATABASE_URL: other.url });
        assert.equal(json.code, 0, json.stderr);
        assert.deepEqual(Object.keys(json.json), ['id']);
        // stderr: only the JSON line naming the database (no note about migrations).
        assert.deepEqual(Object.keys(JSON.parse(json.stderr)), ['note', 'database']);
      } finally {
        await other.drop();
      }
    } finally {
      await database.drop();
    }
  });
});
