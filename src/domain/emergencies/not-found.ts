import type { Kysely } from 'kysely';
import type { Database } from '../../db/types.js';
import { AppError } from '../../errors.js';
import { isUuid } from '../shared/ids.js';

/** 404 for an emergency id that names no emergency of the org, whatever its length or shape. */
export function emergencyNotFound(emergencyId: string): AppError {
  // Ids of any length reach here; the message quotes a bounded prefix of what was asked for.
  const shown = emergencyId.length > 64 ? `${emergencyId.slice(0, 64)}...` : emergencyId;
  return new AppError('emergency_not_found', `No emergency ${shown} in this organization.`);
}

/** The emergency's id (lower case) when it names an emergency of the org; else the 404 above. */
export async function existingEmergencyId(db: Kysely<Database>, orgId: string, emergencyId: string): Promise<string> {
  const id = isUuid(emergencyId) ? emergencyId.toLowerCase() : null;
  const row = id && (await db.selectFrom('emergencies').select('id').where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst());
  if (!row) throw emergencyNotFound(emergencyId);
  return row.id;
}
