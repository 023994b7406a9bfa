import type { Kysely } from 'kysely';
import { recordJsonOf, selectEmergencies } from './0007_emergency_record.js';

/**
 * From here on the stored record is the only way an emergency is read: rows whose record is missing
 * or stale (changed by an instance older than 0007 after that migration ran) get it rebuilt, once.
 * record_sequence is still written with every change, for instances of the previous version during a
 * rolling upgrade, which trust the record only while it matches.
 */
export async function up(db: Kysely<any>): Promise<void> {
  let after = '';
  for (;;) {
    const rows = await selectEmergencies(db).select(['e.record', 'e.record_sequence']).where('e.id', '>', after).orderBy('e.id').limit(500).execute();
    for (const row of rows) {
      if (row.record !== null && Number(row.record_sequence) === Number(row.sequence)) continue;
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

export async function down(): Promise<void> {
  // Nothing to undo: the records it rebuilt are what 0007 would have written.
}
