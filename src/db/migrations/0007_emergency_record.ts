import type { Kysely } from 'kysely';

// Migrations are frozen: what this one needs of the emergency record is written out here, as the
// record was at this version, so replaying it never changes with the service's code.
const parsed = (text: string | null) => (text === null ? null : JSON.parse(text));

export function selectEmergencies(db: Kysely<any>) {
  return db
    .selectFrom('emergencies as e')
    .innerJoin('categories as c', 'c.id', 'e.category_id')
    .leftJoin('emergency_resolutions as r', 'r.emergency_id', 'e.id')
    .select([
      'e.id',
      'e.org_id',
      'e.status',
      'e.external_id',
      'e.source',
      'e.description',
      'e.occurred_at',
      'e.created_at',
      'e.declared_by',
      'e.location',
      'e.metadata',
      'e.sequence',
      'c.id as category_id',
      'c.name as category_name',
      'c.color as category_color',
      'c.severity as category_severity',
      'r.resolved_at',
      'r.resolved_by',
      'r.resolution_note',
    ]);
}

export function recordJsonOf(row: Record<string, any>): string {
  const location = parsed(row.location);
  return JSON.stringify({
    emergencyId: row.id,
    orgId: row.org_id,
    status: row.status,
    externalId: row.external_id,
    category: { id: row.category_id, name: row.category_name, color: row.category_color, severity: row.category_severity },
    source: row.source,
    description: row.description,
    occurredAt: row.occurred_at,
    createdAt: row.created_at,
    resolvedAt: row.resolved_at,
    resolvedBy: parsed(row.resolved_by),
    declaredBy: parsed(row.declared_by),
    location: location && { latitude: location.latitude ?? null, longitude: location.longitude ?? null, floorId: location.floorId ?? null },
    resolutionNote: row.resolution_note,
    metadata: parsed(row.metadata),
  });
}

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
