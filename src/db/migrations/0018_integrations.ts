import type { Kysely } from 'kysely';

/**
 * Monitoring systems in (extensions §12).
 * - `integration_keys`: the routing keys of PagerDuty Events v2 senders, one org each, by their public id part, with only a
 *   SHA-256 of the whole key; revoked keys stay listed.
 * - `integration_settings`: per org and integration, which field of an alert picks the category and how its values map to
 *   categories (JSON: value, lower case → category id).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('integration_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('key_prefix', 'text', (c) => c.notNull().unique())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('integration_keys_org_idx').on('integration_keys').columns(['org_id', 'created_at', 'id']).execute();
  await db.schema
    .createTable('integration_settings')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('category_field', 'text', (c) => c.notNull())
    .addColumn('category_map', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('integration_settings_pk', ['org_id', 'kind'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['integration_settings', 'integration_keys']) await db.schema.dropTable(table).ifExists().execute();
}
