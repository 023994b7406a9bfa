import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { API_VERSION } from '../log/append.js';
import { API_PREFIX } from './prefixes.js';

/** The operation extension that says a route's request body may be left out (removed from the served documents). */
export const OPTIONAL_BODY = 'x-optional-body';

/**
 * @fastify/swagger's options: every route's zod schema collected into one OpenAPI 3.1 document, of
 * which each API's /openapi.json serves its share. Registered on the root, where the routes are seen.
 */
export const openApiOptions: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'Emergency Notification Public API',
      version: API_VERSION,
      description:
        'Declare, re-categorize, resolve and read emergencies; post messages; read categories, users and the audit log. ' +
        'Every request except GET /openapi.json carries Authorization: Bearer <API_KEY>. Every response carries X-Request-Id.',
    },
    servers: [{ url: API_PREFIX }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'enk_live_ + 8 hex + 64 hex' } } },
    security: [{ bearer: [] }],
  },
  transform: (input) => {
    const out = jsonSchemaTransform(input);
    // The framework marks every request body required; a body the route's schema lets be absent is flagged here for
    // the documents (openapi-documents.ts), since the JSON Schema it becomes no longer says so.
    const body = input.schema?.body;
    const schema = body instanceof z.ZodType && body.safeParse(undefined).success ? { ...out.schema, [OPTIONAL_BODY]: true } : out.schema;
    return { schema, url: out.url.startsWith(API_PREFIX) ? out.url.slice(API_PREFIX.length) || '/' : out.url };
  },
  transformObject: jsonSchemaTransformObject,
};
