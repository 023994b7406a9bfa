import { type Kysely, sql } from 'kysely';

/**
 * Exercise emergencies (extensions §11).
 * - `emergencies.exercise`: 1 for an exercise (a drill's, or declared with `exercise: true`), fixed at the declare; lists filter on it.
 * - The stored records of earlier emergencies gain `"exercise":false` as their last member, as new records carry it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('emergencies')
    .addColumn('exercise', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update emergencies set record = substr(record, 1, length(record) - 1) || ',"exercise":false}' where record is not null and record like '%}'`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`update emergencies set record = replace(record, ',"exercise":false}', '}') where record like '%,"exercise":false}'`.execute(db);
  await db.schema.alterTable('emergencies').dropColumn('exercise').execute();
}
