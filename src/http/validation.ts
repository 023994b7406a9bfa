import type { FastifySchemaCompiler } from 'fastify';
import { z } from 'zod';
import { inspectJson, MAX_BODY_DEPTH, NUL_MESSAGE } from '../domain/shared/json-guards.js';
import { FieldValidationError, type FieldIssue } from '../errors.js';

type Part = 'body' | 'query' | 'path' | 'header';

const partOf: Record<string, Part> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** Marks a failed request-part validation; the error handler renders it in the FastAPI 422 shape. */
export class RequestPartError extends Error {
  constructor(readonly issues: z.core.$ZodIssue[]) {
    super('request validation failed');
  }
}

function issueType(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? 'missing' : `${issue.expected}_type`;
    case 'too_big':
      return issue.origin === 'string' || issue.origin === 'array' ? 'too_long' : 'less_than_equal';
    case 'too_small':
      return issue.origin === 'string' || issue.origin === 'array' ? 'too_short' : 'greater_than_equal';
    case 'invalid_format':
      return issue.format === 'regex' ? 'string_pattern_mismatch' : `${issue.format}_format`;
    case 'invalid_value':
      // A required enum/literal that is absent is reported by zod as invalid_value, not invalid_type.
      return issue.input === undefined ? 'missing' : 'enum';
    case 'unrecognized_keys':
      return 'extra_forbidden';
    case 'custom':
      return (issue.params?.type as string | undefined) ?? 'value_error';
    default:
      return 'value_error';
  }
}

/** Turns zod issues into `{loc,msg,type}` entries, one per offending field. */
export function toFieldIssues(part: Part, issues: z.core.$ZodIssue[]): FieldIssue[] {
  const out: FieldIssue[] = [];
  for (const issue of issues) {
    const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ loc: [part, ...path, key], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' });
      continue;
    }
    const type = issueType(issue);
    const msg = type === 'missing' ? 'Field required' : issue.message;
    out.push({ loc: [part, ...path], msg, type });
  }
  return out;
}

export function fieldIssuesOf(err: RequestPartError & { validationContext?: string }): FieldIssue[] {
  return toFieldIssues(partOf[err.validationContext ?? 'body'] ?? 'body', err.issues);
}

/** A check that accepts only what the schema accepts (never more), or null when none can be derived. */
type FastAccept = (data: unknown) => boolean;

interface ZodDefLike {
  type: string;
  shape?: Record<string, { _zod: { def: ZodDefLike } }>;
  catchall?: unknown;
  format?: string;
  pattern?: RegExp;
  checks?: { _zod: { def: { check: string; minimum?: number; maximum?: number } } }[];
}

/**
 * Path parameters are an object of a few strings (UUIDs, bounded ids), validated on every request.
 * For such schemas (an object whose fields are plain strings with only length bounds, or UUIDs) a
 * direct check of the same rules accepts what zod would accept, at a small share of zod's cost;
 * anything it does not accept goes through zod, which produces the errors. Other schemas: null.
 */
export function fastAcceptOf(schema: z.ZodType): FastAccept | null {
  const def = (schema as unknown as { _zod: { def: ZodDefLike } })._zod.def;
  if (def.type !== 'object' || !def.shape || def.catchall !== undefined) return null;
  const fields: [string, (value: string) => boolean][] = [];
  for (const [key, field] of Object.entries(def.shape)) {
    const f = field._zod.def;
    if (f.type !== 'string') return null;
    if (f.format !== undefined) {
      if (f.format !== 'uuid' || !(f.pattern instanceof RegExp) || (f.checks?.length ?? 0) > 0) return null;
      const pattern = f.pattern;
      fields.push([key, (value) => pattern.test(value)]);
      continue;
    }
    let min = 0;
    let max = Infinity;
    for (const check of f.checks ?? []) {
      const c = check._zod.def;
      if (c.check === 'min_length' && c.minimum !== undefined) min = Math.max(min, c.minimum);
      else if (c.check === 'max_length' && c.maximum !== undefined) max = Math.min(max, c.maximum);
      else return null;
    }
    fields.push([key, (value) => value.length >= min && value.length <= max && !value.includes('\u0000')]);
  }
  return (data) => {
    if (data === null || typeof data !== 'object') return false;
    const record = data as Record<string, unknown>;
    let present = 0;
    for (const key in record) {
      if (!Object.hasOwn(record, key)) continue;
      present++;
    }
    if (present !== fields.length) return false;
    for (const [key, accepts] of fields) {
      const value = record[key];
      if (typeof value !== 'string' || !accepts(value)) return false;
    }
    return true;
  };
}

/**
 * What no schema may see: text holding U+0000 anywhere (422 `string_nul` at the field), and a body
 * nested deeper than MAX_BODY_DEPTH (422 `json_invalid` at `["body"]`). Null when the input is clear.
 */
export function hostileInputError(part: Part, data: unknown): FieldValidationError | null {
  const { nulAt, tooDeep } = inspectJson(data, MAX_BODY_DEPTH);
  if (tooDeep) return new FieldValidationError([{ loc: [part], msg: `The JSON nests deeper than ${MAX_BODY_DEPTH} levels.`, type: 'json_invalid' }]);
  if (nulAt) return new FieldValidationError([{ loc: [part, ...nulAt], msg: NUL_MESSAGE, type: 'string_nul' }]);
  return null;
}

/** Fastify hands a missing body to the validator as null; treat it as an absent body. */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  const fastAccept = httpPart === 'params' ? fastAcceptOf(schema) : null;
  const part = partOf[httpPart ?? 'body'] ?? 'body';
  return (data) => {
    if (fastAccept?.(data)) return { value: data };
    const hostile = hostileInputError(part, data);
    if (hostile) return { error: hostile };
    const result = schema.safeParse(data === null ? undefined : data, { reportInput: true });
    if (result.success) return { value: result.data };
    return { error: new RequestPartError(result.error.issues) };
  };
};
