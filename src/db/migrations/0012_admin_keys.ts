import type { Kysely } from 'kysely';

/**
 * Admin keys (`enk_adm_`): the credentials of the admin API. Stored like API keys (the 8 public hex
 * characters indexed, a SHA-256 of the whole key), with a subject: the whole instance, or everything
 * beneath one partner or one enterprise.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('admin_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('key_prefix', 'text', (c) => c.notNull().unique())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('subject_type', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .addColumn('last_used_at', 'text')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('admin_keys').ifExists().execute();
}
