import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { capMappingInput, capMappingList, capMappingRecord, type CapMappingRecord } from '../../../domain/cap/schema.js';
import { deleteCapMapping, listCapMappings, setCapMapping } from '../../../domain/cap/service.js';
import { uuid } from '../../../domain/shared/schema.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { adminErrors, idParam } from './params.js';

/** An organization's mapping of CAP `event` names to its categories, used when CAP alerts are ingested. */
export const capMappingAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const orgPath = z.object({ org_id: idParam });

    r.get('/orgs/:org_id/cap-mappings', {
      schema: {
        operationId: 'listCapMappings',
        tags: ['cap'],
        summary: "The organization's mappings of CAP events to categories, by event.",
        params: orgPath,
        response: { 200: capMappingList, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: (req) => listCapMappings(ctx, callerOf(req), req.params.org_id),
    });
    r.post('/orgs/:org_id/cap-mappings', {
      config: {
        idempotentAnswer: (value) => {
          const { mapping, created } = value as { mapping: CapMappingRecord; created: boolean };
          return { status: created ? 201 : 200, body: mapping };
        },
      },
      schema: {
        operationId: 'setCapMapping',
        tags: ['cap'],
        summary: 'Map a CAP event to a category of the organization: 201 a new mapping, 200 when it replaces the mapping of that event.',
        description:
          'An ingested CAP alert (POST /orgs/{org_id}/cap of the public API) whose info `event` matches (case-insensitively, runs of ' +
          'white space as one) lands in this category; an event with no mapping lands in Uncategorized. At most 1000 mappings per ' +
          "organization. Recorded in the organization's audit log (cap_mapping.set).",
        headers: idempotencyHeaders,
        params: orgPath,
        body: capMappingInput,
        response: {
          201: capMappingRecord,
          200: capMappingRecord.describe('The mapping of that event, replaced.'),
          ...adminErrors({ 404: 'not_found: no such organization.', 409: 'conflict: the organization already has 1000 mappings.' }),
        },
      },
      handler: async (req, reply) => {
        const { mapping, created } = await setCapMapping(ctx, callerOf(req), req.params.org_id, req.body, writeOptionsOf(req));
        return reply.code(created ? 201 : 200).send(mapping);
      },
    });
    r.delete('/orgs/:org_id/cap-mappings/:mapping_id', {
      schema: {
        operationId: 'deleteCapMapping',
        tags: ['cap'],
        summary: 'Remove a mapping: alerts with its event land in Uncategorized again (audit: cap_mapping.deleted).',
        params: orgPath.extend({ mapping_id: idParam }),
        response: {
          200: z.object({ mappingId: uuid, deleted: z.literal(true) }),
          ...adminErrors({ 404: 'not_found: no such organization or mapping.' }),
        },
      },
      handler: (req) => deleteCapMapping(ctx, callerOf(req), req.params.org_id, req.params.mapping_id, writeOptionsOf(req)),
    });
  };
