import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../errors.js';
import { errorResponse } from '../error-schemas.js';
import type { OpenApiDocument } from '../openapi-documents.js';

/** Whether an Accept header admits JSON (absent, `*\/*`, `application/*` or `application/json`). */
function acceptsJson(accept: string | undefined): boolean {
  if (!accept) return true;
  return accept.split(',').some((part) => {
    const [type, ...params] = part.trim().toLowerCase().split(';');
    const refused = params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p));
    return !refused && (type === '*/*' || type === 'application/*' || type === 'application/json');
  });
}

/** `GET /openapi.json` of one API (no authentication), cut from the application's whole document. */
export const openApiDocumentRoute =
  (root: FastifyInstance, name: 'public' | 'admin', document: (whole: OpenApiDocument) => OpenApiDocument): FastifyPluginAsync =>
  async (api) => {
    api.withTypeProvider<ZodTypeProvider>().get(
      '/openapi.json',
      {
        schema: {
          operationId: name === 'public' ? 'getOpenApiDocument' : 'getAdminOpenApiDocument',
          tags: ['meta'],
          summary: `This OpenAPI 3.1 description of the ${name} API (no authentication).`,
          security: [],
          response: {
            200: z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) }).describe('The OpenAPI 3.1 document.'),
            406: errorResponse.describe('not_acceptable: the Accept header excludes application/json.'),
          },
        },
      },
      async (request) => {
        if (!acceptsJson(request.headers.accept)) throw new AppError('not_acceptable', 'This document is served as application/json only.');
        return document(root.swagger() as unknown as OpenApiDocument);
      },
    );
  };
