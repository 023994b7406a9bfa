import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { categoryPage } from '../../domain/categories/schema.js';
import { listCategories } from '../../domain/categories/service.js';
import { declareInput, emergencyPage, emergencyRecord, listEmergenciesQuery, recategorizeInput, resolveInput } from '../../domain/emergencies/schema.js';
import { declareEmergency, getEmergencyJson, listEmergenciesJson, recategorizeEmergency, resolveEmergency } from '../../domain/emergencies/service.js';
import { callerOf } from '../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../edge/idempotency.js';
import { errorResponses } from '../error-schemas.js';
import { sendJsonText } from '../json-text.js';
import { emergencyPath, orgPath, pageQuery } from './params.js';

/** Reads answer with the stored records' JSON text (see migration 0007). */
export const emergencyRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.get('/orgs/:org_id/emergencies/categories', {
      schema: {
        operationId: 'listCategories',
        tags: ['categories'],
        summary: 'List the categories an emergency can be declared under (permission: categories:read).',
        params: orgPath,
        querystring: pageQuery,
        response: { 200: categoryPage, ...errorResponses() },
      },
      handler: (req) => listCategories(ctx, callerOf(req), req.params.org_id, req.query),
    });

    r.post('/orgs/:org_id/emergencies', {
      config: { idempotentAnswer: (emergency) => ({ status: 201, body: emergency }) },
      schema: {
        headers: idempotencyHeaders,
        operationId: 'declareEmergency',
        tags: ['emergencies'],
        summary: 'Declare an emergency (permission: emergencies:write). Emits emergency.declared.',
        description:
          'Without categoryId/categoryName the emergency lands under Uncategorized. Supply externalId to deduplicate retries: ' +
          'a second declare with the same externalId is a 409 external_id_conflict carrying the existing emergencyId.',
        params: orgPath,
        body: declareInput,
        response: {
          201: emergencyRecord,
          ...errorResponses({
            409: 'external_id_conflict: the externalId is already used in this organization; body adds emergencyId. idempotency_key_in_use: a request with this Idempotency-Key is still running (Retry-After: 1).',
            413: 'payload_too_large: the body exceeds 1 MiB.',
            415: 'unsupported_media_type: the body is not application/json.',
          }),
        },
      },
      handler: async (req, reply) => {
        const emergency = await declareEmergency(ctx, callerOf(req), req.params.org_id, req.body, writeOptionsOf(req));
        return reply.code(201).send(emergency);
      },
    });

    r.get('/orgs/:org_id/emergencies', {
      schema: {
        operationId: 'listEmergencies',
        tags: ['emergencies'],
        summary: 'List emergencies, newest occurredAt first (permission: emergencies:read).',
        params: orgPath,
        querystring: listEmergenciesQuery,
        response: { 200: emergencyPage, ...errorResponses() },
      },
      handler: async (req, reply) => sendJsonText(reply, await listEmergenciesJson(ctx, callerOf(req), req.params.org_id, req.query)),
    });

    r.get('/orgs/:org_id/emergencies/:emergency_id', {
      schema: {
        operationId: 'getEmergency',
        tags: ['emergencies'],
        summary: 'Get one emergency with committed state (permission: emergencies:read).',
        params: emergencyPath,
        response: { 200: emergencyRecord, ...errorResponses({ 404: 'emergency_not_found' }) },
      },
      handler: async (req, reply) => sendJsonText(reply, await getEmergencyJson(ctx, callerOf(req), req.params.org_id, req.params.emergency_id)),
    });

    r.patch('/orgs/:org_id/emergencies/:emergency_id', {
      config: { idempotentAnswer: (emergency) => ({ status: 200, body: emergency }) },
      schema: {
        headers: idempotencyHeaders,
        operationId: 'recategorizeEmergency',
        tags: ['emergencies'],
        summary: 'Re-categorize an emergency (permission: emergencies:write). Emits emergency.categorized.',
        description:
          'Exactly one of categoryId or categoryName; any other field is a 422 extra_forbidden. Naming the current category of a categorized ' +
          'emergency is a no-op that emits nothing.',
        params: emergencyPath,
        body: recategorizeInput,
        response: {
          200: emergencyRecord,
          ...errorResponses({
            404: 'emergency_not_found',
            409: 'emergency_resolved: resolved emergencies are immutable. idempotency_key_in_use: a request with this Idempotency-Key is still running.',
          }),
        },
      },
      handler: (req) => recategorizeEmergency(ctx, callerOf(req), req.params.org_id, req.params.emergency_id, req.body, writeOptionsOf(req)),
    });

    r.post('/orgs/:org_id/emergencies/:emergency_id/resolutions', {
      // An emergency already resolved is answered with no write: nothing is stored, the key stays free.
      config: {
        idempotentAnswer: (value) => {
          const { emergency, created } = value as { emergency: unknown; created: boolean };
          return created ? { status: 201, body: emergency } : null;
        },
      },
      schema: {
        headers: idempotencyHeaders,
        operationId: 'resolveEmergency',
        tags: ['emergencies'],
        summary: 'Resolve an emergency (permission: emergencies:write). Emits emergency.resolved.',
        description:
          'Returns the resolved Emergency: 201 the first time, 200 with the existing resolution on every later call (no event). ' +
          'A later call shows a record the caller did not write, so it takes the read permission too: 403 permission_denied without it.',
        params: emergencyPath,
        body: resolveInput.optional(),
        response: {
          201: emergencyRecord,
          200: emergencyRecord.describe('Already resolved: the existing resolution.'),
          ...errorResponses({ 404: 'emergency_not_found', 409: 'idempotency_key_in_use: a request with this Idempotency-Key is still running.' }),
        },
      },
      handler: async (req, reply) => {
        const { emergency, created } = await resolveEmergency(
          ctx,
          callerOf(req),
          req.params.org_id,
          req.params.emergency_id,
          req.body ?? {},
          writeOptionsOf(req),
        );
        return reply.code(created ? 201 : 200).send(emergency);
      },
    });
  };
