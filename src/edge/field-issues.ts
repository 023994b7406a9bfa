import type { z } from 'zod';
import { inspectJson, MAX_BODY_DEPTH, NUL_MESSAGE } from '../domain/shared/json-guards.js';
import { FieldValidationError, type FieldIssue } from '../errors.js';

/**
 * Field-level failures in the one shape every surface reports them in, `{loc, msg, type}`: REST
 * renders them as the 422 list, the tool server as the issues of a 422 tool error.
 */

export type Part = 'body' | 'query' | 'path' | 'header';

export const partOf: Record<string, Part> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

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

/**
 * At most this many entries are listed, and names in `loc` are cut at MAX_LOC_NAME characters: a
 * body of 100,000 unknown keys (or one key of a megabyte) must not make a larger error answer
 * than the request (extensions.md §9: no answer past 1 MiB).
 */
export const MAX_FIELD_ISSUES = 100;
const MAX_LOC_NAME = 256;

const locName = (p: PropertyKey): string | number =>
  typeof p === 'number' ? p : typeof p === 'symbol' ? String(p) : p.length > MAX_LOC_NAME ? `${p.slice(0, MAX_LOC_NAME)}…` : p;

/** Turns zod issues into `{loc,msg,type}` entries, one per offending field (the first MAX_FIELD_ISSUES of them). */
export function toFieldIssues(part: Part, issues: z.core.$ZodIssue[]): FieldIssue[] {
  const out: FieldIssue[] = [];
  let unlisted = 0;
  const add = (issue: FieldIssue) => (out.length < MAX_FIELD_ISSUES ? out.push(issue) : unlisted++);
  for (const issue of issues) {
    const path = issue.path.map(locName);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add({ loc: [part, ...path, locName(key)], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' });
      continue;
    }
    const type = issueType(issue);
    const msg = type === 'missing' ? 'Field required' : issue.message;
    add({ loc: [part, ...path], msg, type });
  }
  if (unlisted > 0) out.push({ loc: [part], msg: `${unlisted} more issues are not listed; correct these and send again.`, type: 'too_many_issues' });
  return out;
}

export function fieldIssuesOf(err: RequestPartError & { validationContext?: string }): FieldIssue[] {
  return toFieldIssues(partOf[err.validationContext ?? 'body'] ?? 'body', err.issues);
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
