import type { Kysely } from 'kysely';
import type { Database } from '../../db/types.js';
import { fromJson } from '../shared/json.js';
import type { Actor } from '../shared/schema.js';
import type { EmergencyRecord } from './schema.js';

/** The emergency with its category and resolution, as every read returns it. */
export function selectEmergencies(db: Kysely<Database>) {
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

export interface EmergencyRow {
  id: string;
  org_id: string;
  status: string;
  external_id: string | null;
  source: string | null;
  description: string | null;
  occurred_at: string;
  created_at: string;
  declared_by: string;
  location: string | null;
  metadata: string | null;
  sequence: number;
  category_id: string;
  category_name: string;
  category_color: string;
  category_severity: number;
  resolved_at: string | null;
  resolved_by: string | null;
  resolution_note: string | null;
}

export function toEmergencyRecord(row: EmergencyRow): EmergencyRecord {
  const location = fromJson<{ latitude?: number; longitude?: number; floorId?: string }>(row.location);
  return {
    emergencyId: row.id,
    orgId: row.org_id,
    status: row.status as EmergencyRecord['status'],
    externalId: row.external_id,
    category: { id: row.category_id, name: row.category_name, color: row.category_color, severity: row.category_severity },
    source: row.source,
    description: row.description,
    occurredAt: row.occurred_at,
    createdAt: row.created_at,
    resolvedAt: row.resolved_at,
    resolvedBy: fromJson<Actor>(row.resolved_by),
    declaredBy: fromJson<Actor>(row.declared_by)!,
    location: location && {
      latitude: location.latitude ?? null,
      longitude: location.longitude ?? null,
      floorId: location.floorId ?? null,
    },
    resolutionNote: row.resolution_note,
    metadata: fromJson<Record<string, unknown>>(row.metadata),
  };
}

/** The stored record of a row when it is current (written at the row's sequence); null when stale or absent. */
export function currentRecord(row: { record: string | null; record_sequence: number | string | null; sequence: number | string }): string | null {
  return row.record !== null && Number(row.record_sequence) === Number(row.sequence) ? row.record : null;
}

/** The record of a row read with its category and resolution, as JSON text. */
export const recordJsonOf = (row: EmergencyRow): string => JSON.stringify(toEmergencyRecord(row));

/** The `data` of an emergency event, with the emergency's record already encoded. */
export const eventDataJson = (recordJson: string): string => `{"emergency":${recordJson}}`;
