import { z } from 'zod';
import { errorStatus } from '../errors.js';

export const errorResponse = z
  .object({
    detail: z
      .object({
        error: z.enum(Object.keys(errorStatus) as [string, ...string[]]).describe('Stable machine-readable code.'),
        message: z.string().describe('Human-readable explanation.'),
      })
      .catchall(z.unknown()),
  })
  .meta({ id: 'ErrorResponse', description: 'Every non-field error: `{detail:{error,message,...}}`.' });

export const validationErrorResponse = z
  .object({
    detail: z.array(
      z.object({
        loc: z.array(z.union([z.string(), z.number()])).describe('Where the problem is, starting with body, query or path.'),
        msg: z.string(),
        type: z.string().describe('e.g. missing, extra_forbidden, string_type, too_long, category_not_found, cursor_invalid'),
      }),
    ),
  })
  .meta({ id: 'HTTPValidationError' });

const described = (schema: z.ZodType, description: string) => schema.describe(description);

/** The error responses every authenticated route can return, for the OpenAPI description. */
export function errorResponses(extra: Partial<Record<404 | 409 | 410 | 413 | 415 | 429 | 503, string>> = {}) {
  const out: Record<number, z.ZodType> = {
    401: described(errorResponse, 'unauthenticated: missing, invalid, expired or revoked key (header WWW-Authenticate: Bearer).'),
    403: described(errorResponse, 'org_not_covered (key does not cover the organization) or permission_denied (key lacks read/write).'),
    422: described(
      z.union([validationErrorResponse, errorResponse]),
      'Validation failure (HTTPValidationError), or, on a write sent with an Idempotency-Key used before for another request, idempotency_key_reused (ErrorResponse).',
    ),
    429: described(errorResponse, 'rate_limited: per-key rate limit exceeded; see Retry-After.'),
    500: described(errorResponse, 'internal: the outcome of a write is unknown; read before retrying.'),
    503: described(
      errorResponse,
      'unavailable (with Retry-After): the database is unavailable, or too many large bodies are being received; retry after the given seconds (writes: with the same Idempotency-Key).',
    ),
  };
  for (const [status, text] of Object.entries(extra)) out[Number(status)] = described(errorResponse, text);
  return out;
}
