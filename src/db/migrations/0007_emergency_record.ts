import type { Kysely } from 'kysely';
import { recordJsonOf, selectEmergencies } from '../../domain/emergencies/repo.js';

/**
 * The emergency as the API returns it, stored as JSON next to its row and rewritten by every change,
 * so reading one is a primary-key lookup of one column, sent as is: no join with its category and
 * resolution, no JSON decoding of its parts, no encoding of the response. record_sequence is the
 * sequence the record was written at; a row changed without its record (by an instance that predates
 * this column, during a rolling upgrade) no longer matches and is read the long way. Existing rows
 * get their record here.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('emergencies').addColumn('record', 'text').execute();
  await db.schema.alterTable('emergencies').addColumn('record_sequence', 'integer').execute();
  let after = '';
  for (;;) {
    const rows = await selectEmergencies(db).where('e.id', '>', after).orderBy('e.id').limit(500).execute();
    for (const row of rows) {
      await db
        .updateTable('emergencies')
        .set({ record: recordJsonOf(row), record_sequence: row.sequence })
        .where('id', '=', row.id)
        .execute();
    }
    if (rows.length < 500) break;
    after = rows.at(-1)!.id;
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('emergencies').dropColumn('record_sequence').execute();
  await db.schema.alterTable('emergencies').dropColumn('record').execute();
}
