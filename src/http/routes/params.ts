import { z } from 'zod';
import { cursorParam, limitParam, orgIdParam } from '../../domain/shared/schema.js';

export const orgPath = z.object({ org_id: orgIdParam.describe('Target organization id (UUID).') });
export const emergencyPath = z.object({
  org_id: orgIdParam.describe('Target organization id (UUID).'),
  // No upper bound: an id of any length that names no emergency is a 404 emergency_not_found.
  emergency_id: z.string().min(1).describe('Emergency id.'),
});
export const pageQuery = z.object({ cursor: cursorParam.optional(), limit: limitParam });
