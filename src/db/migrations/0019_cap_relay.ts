import type { Kysely } from 'kysely';

/**
 * The faithful CAP relay (extensions §12).
 * - `cap_originals`: the document of each ingested CAP message an emergency's export still relays, by the org and the
 *   message's `sender` and `identifier` (CAP's name for a message); at most one per emergency once its chain is pruned, each at
 *   most the ingest limit (256 KiB).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('cap_originals')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('sender', 'text', (c) => c.notNull())
    .addColumn('identifier', 'text', (c) => c.notNull())
    .addColumn('document', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('cap_originals_pk', ['org_id', 'sender', 'identifier'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('cap_originals').ifExists().execute();
}
