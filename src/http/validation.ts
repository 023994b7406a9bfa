import type { FastifySchemaCompiler } from 'fastify';
import { z } from 'zod';
import { hostileInputError, partOf, RequestPartError } from '../edge/field-issues.js';

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
 * direct check of the same rules accepts what zod would accept, at a small share of zod's cost (zod
 * measured about 1 µs a request of GET's 22-24 µs in bench/declare.ts; it reads zod's schema
 * definition, `_zod.def`, which zod does not document; test/http/params-fast-path.test.ts holds the
 * direct check to never accept more than zod);
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

/** Fastify hands a missing body to the validator as null; treat it as an absent body. */
/**
 * Header schemas describe a few optional headers of a loose object (Idempotency-Key): when none of
 * them is sent, every header object passes, so it is accepted as is instead of copied by zod on every
 * request of the route.
 */
function headersFastAccept(schema: z.ZodType): FastAccept | null {
  if (!(schema instanceof z.ZodObject)) return null;
  const keys = Object.keys(schema.shape);
  return (data) => data !== null && typeof data === 'object' && !keys.some((k) => Object.hasOwn(data, k));
}

export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  const fastAccept = httpPart === 'params' ? fastAcceptOf(schema) : httpPart === 'headers' ? headersFastAccept(schema) : null;
  const part = partOf[httpPart ?? 'body'] ?? 'body';
  // A header schema only checks (its loose object changes no value). The request keeps Node's own
  // header object: Fastify stores a validated one beside it, and from then on each read of
  // request.headers copies every header into a new object (seen at 2-3 µs a request in CPU profiles of
  // bench/declare.ts). `true` passes without handing a value back.
  const checkOnly = httpPart === 'headers';
  return (data) => {
    if (fastAccept?.(data)) return checkOnly ? true : { value: data };
    const hostile = hostileInputError(part, data);
    if (hostile) return { error: hostile };
    const result = schema.safeParse(data === null ? undefined : data, { reportInput: true });
    if (result.success) return checkOnly ? true : { value: result.data };
    return { error: new RequestPartError(result.error.issues) };
  };
};
