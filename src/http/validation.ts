import type { FastifySchemaCompiler } from 'fastify';
import { z } from 'zod';
import { hostileInputError, partOf, RequestPartError } from '../edge/field-issues.js';

/** A check that accepts only what the schema accepts (never more); anything else goes through zod. */
type FastAccept = (data: unknown) => boolean;

const fastChecks = new WeakMap<z.ZodType, FastAccept>();

/**
 * Path parameters are validated on every request; a direct check of the same rules is far cheaper
 * than zod. The check is written beside its schema (test/http/params-fast-path.test.ts holds it to
 * never accept more than zod); what it does not accept goes through zod, which writes the 422.
 */
export function withFastAccept<T extends z.ZodType>(schema: T, accept: FastAccept): T {
  fastChecks.set(schema, accept);
  return schema;
}

/** The direct check registered for a schema, or null. */
export function fastAcceptOf(schema: z.ZodType): FastAccept | null {
  return fastChecks.get(schema) ?? null;
}

/** A check for an object of exactly these string fields, each accepted by its rule. */
export function exactStrings(fields: Record<string, (value: string) => boolean>): FastAccept {
  const rules = Object.entries(fields);
  return (data) => {
    if (data === null || typeof data !== 'object') return false;
    const record = data as Record<string, unknown>;
    let present = 0;
    for (const key in record) if (Object.hasOwn(record, key)) present++;
    if (present !== rules.length) return false;
    for (const [key, accepts] of rules) {
      const value = record[key];
      if (typeof value !== 'string' || !accepts(value)) return false;
    }
    return true;
  };
}

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
  // A header schema only checks: handing back a value would make Fastify copy every header on each
  // later read of request.headers. `true` passes without handing a value back.
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
