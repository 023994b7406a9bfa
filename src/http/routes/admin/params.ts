import { z } from 'zod';
import { errorResponse, validationErrorResponse } from '../../error-schemas.js';

/** An id in an admin path: any text up to 256 characters; one that names nothing is a 404 not_found. */
export const idParam = z.string().min(1).max(256);

/** The error responses of every admin route, for the OpenAPI description. */
export function adminErrors(extra: Partial<Record<404 | 409, string>> = {}) {
  const out: Record<number, z.ZodType> = {
    401: errorResponse.describe('unauthenticated: missing, invalid or revoked admin key (API keys are refused here).'),
    403: errorResponse.describe('subject_not_covered: this needs an admin key of a wider subject (only instance keys create partners or mint instance keys).'),
    422: z.union([validationErrorResponse, errorResponse]).describe('Validation failure, or idempotency_key_reused.'),
    429: errorResponse.describe('rate_limited: see Retry-After.'),
    500: errorResponse.describe('internal: the outcome of a write is unknown; read before retrying.'),
    503: errorResponse.describe('unavailable: the database is unavailable; retry after Retry-After (writes: with the same Idempotency-Key).'),
  };
  // An id outside the admin key's subject is answered as an unknown one, so that it cannot be told apart.
  for (const [status, text] of Object.entries(extra)) {
    out[Number(status)] = errorResponse.describe(status === '404' ? `${text.replace(/\.$/, '')} (or outside the admin key\u2019s subject).` : text);
  }
  return out;
}
