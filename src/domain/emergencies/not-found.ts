import { AppError } from '../../errors.js';

/** 404 for an emergency id that names no emergency of the org, whatever its length or shape. */
export function emergencyNotFound(emergencyId: string): AppError {
  // Ids of any length reach here; the message quotes a bounded prefix of what was asked for.
  const shown = emergencyId.length > 64 ? `${emergencyId.slice(0, 64)}...` : emergencyId;
  return new AppError('emergency_not_found', `No emergency ${shown} in this organization.`);
}
