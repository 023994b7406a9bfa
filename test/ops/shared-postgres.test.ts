import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/connect.js';
import { migrateToLatest, migrationsApplied } from '../../src/db/migrate.js';
import { freshDatabaseUrl, onDatabase, onPostgres } from '../helpers/db.js';

/**
 * One PostgreSQL database holding several schemas (`?schema=` in DATABASE_URL): an instance reads and
 * migrates only its own, whatever happens in the others at the same time.
 */
describe('an instance in its own schema of a shared PostgreSQL database', {
  skip: onPostgres ? false : 'schemas of a shared database exist only on PostgreSQL (CI runs this suite there)',
}, () => {
  const neighbour = `t_neighbour_${process.pid}`;

  before(() => onDatabase(`create schema ${neighbour}; create table ${neighbour}.emergencies (id serial primary key, note text)`));
  after(() => onDatabase(`drop schema if exists ${neighbour} cascade`));

  it("introspects only its own schema's tables", async () => {
    const database = freshDatabaseUrl();
    const handle = openDatabase(database.url);
    try {
      await migrateToLatest(handle);
      const tables = await handle.db.introspection.getTables();
      assert.ok(tables.length > 5);
      assert.deepEqual(new Set(tables.map((t) => t.schema)), new Set([handle.pgSchema]));
      const emergencies = tables.filter((t) => t.name === 'emergencies');
      assert.equal(emergencies.length, 1, 'the neighbour schema has a table of the same name');
      assert.ok(emergencies[0]!.columns.some((c) => c.name === 'org_id' && !c.isNullable));
      // Kysely's bookkeeping tables are listed only when asked for.
      assert.ok(!tables.some((t) => t.name.startsWith('kysely_')));
      const withInternal = await handle.db.introspection.getTables({ withInternalKyselyTables: true });
      assert.ok(withInternal.some((t) => t.name === 'kysely_migration'));
    } finally {
      await handle.close();
      await database.drop();
    }
  });

  it('migrates a new schema while other schemas are created and dropped', async () => {
    // Another tenant of the database creating and dropping schemas with tables, as a test run or a
    // second deployment would. Reading their catalog by name during a drop is what used to fail.
    let churning = true;
    let churned = 0;
    const churn = (async () => {
      for (let i = 0; churning; i++) {
        const schema = `t_churn_${process.pid}_${i}`;
        await onDatabase(
          `create schema ${schema}; create table ${schema}.a (id serial primary key, b text); create table ${schema}.c (id serial primary key, d text)`,
        );
        await onDatabase(`drop schema ${schema} cascade`);
        churned++;
      }
    })();
    try {
      for (let lane = 0; lane < 12; lane++) {
        const database = freshDatabaseUrl();
        const handle = openDatabase(database.url);
        try {
          const applied = await migrateToLatest(handle);
          assert.ok(applied.length > 0, 'a new schema gets every migration');
          assert.equal(await migrationsApplied(handle), true);
        } finally {
          await handle.close();
          await database.drop();
        }
      }
    } finally {
      churning = false;
      await churn;
    }
    assert.ok(churned > 0, 'schemas were dropped while the instances migrated');
  });
});
