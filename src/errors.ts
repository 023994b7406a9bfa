/** The closed list of error codes: HTTP statuses and tool errors both derive from it, so a code means the same on every surface. */
export const errorStatus = {
  unauthenticated: 401,
  org_not_covered: 403,
  permission_denied: 403,
  subject_not_covered: 403,
  bad_request: 400,
  not_found: 404,
  emergency_not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  request_timeout: 408,
  external_id_conflict: 409,
  idempotency_key_in_use: 409,
  emergency_resolved: 409,
  conflict: 409,
  events_expired: 410,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  invalid_base64: 422,
  invalid_data_uri: 422,
  empty_content: 422,
  too_large: 422,
  invalid_url: 422,
  scheme_not_allowed: 422,
  port_not_allowed: 422,
  host_not_allowed: 422,
  credentials_not_allowed: 422,
  idempotency_key_reused: 422,
  /** A `cursor` the service did not hand out (REST: the 422 list with this `type` at `["query","cursor"]`). */
  cursor_invalid: 422,
  /** Tool-server arguments that fail validation (REST renders these as the FastAPI 422 body instead). */
  validation_error: 422,
  rate_limited: 429,
  too_many_streams: 429,
  /** A device upgrade beyond its org's or partner's device-socket quota on the instance (the upgrade's plain HTTP answer). */
  too_many_devices: 429,
  headers_too_large: 431,
  internal: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export class AppError extends Error {
  readonly status: number;
  /** When to come back (the Retry-After header), for a refusal that only asks the client to wait. */
  readonly retryAfterSeconds: number | undefined;
  /** `status` overrides the code's usual one where it serves two situations: `unsupported_media_type` is 415 for a non-JSON body, 422 for an attachment. */
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
    options: { status?: number; cause?: unknown; retryAfterSeconds?: number } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status ?? errorStatus[code];
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  toDetail(): Record<string, unknown> {
    return { error: this.code, message: this.message, ...this.extra };
  }
}

/** One entry of a FastAPI-shaped 422 body. */
export interface FieldIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** A field-level validation failure: rendered as `{detail:[{loc,msg,type}]}` with status 422. */
export class FieldValidationError extends Error {
  readonly status = 422;
  constructor(readonly issues: FieldIssue[]) {
    super(issues.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
  }
}

export function fieldError(loc: (string | number)[], msg: string, type = 'value_error'): FieldValidationError {
  return new FieldValidationError([{ loc, msg, type }]);
}
