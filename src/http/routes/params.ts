import { z } from 'zod';
import { cursorParam, limitParam, orgIdParam } from '../../domain/shared/schema.js';
import { exactStrings, withFastAccept } from '../validation.js';

const uuidPattern = z.regexes.uuid();
const isUuid = (v: string) => uuidPattern.test(v);
const isNonEmptyText = (v: string) => v.length > 0 && !v.includes('\u0000');

export const orgPath = withFastAccept(z.object({ org_id: orgIdParam.describe('Target organization id (UUID).') }), exactStrings({ org_id: isUuid }));
export const emergencyPath = withFastAccept(
  z.object({
    org_id: orgIdParam.describe('Target organization id (UUID).'),
    // No upper bound: an id of any length that names no emergency is a 404 emergency_not_found.
    emergency_id: z.string().min(1).describe('Emergency id.'),
  }),
  exactStrings({ org_id: isUuid, emergency_id: isNonEmptyText }),
);
export const pageQuery = z.object({ cursor: cursorParam.optional(), limit: limitParam });
