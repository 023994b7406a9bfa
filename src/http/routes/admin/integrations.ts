import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import {
  categoryMappingInput,
  categoryMappingRecord,
  getCategoryMapping,
  MAPPED_INTEGRATIONS,
  updateCategoryMapping,
} from '../../../domain/integrations/category-mapping.js';
import {
  createIntegrationKey,
  createIntegrationKeyInput,
  type IntegrationKeyRecord,
  integrationKeyRecord,
  listIntegrationKeys,
  revokeIntegrationKey,
} from '../../../domain/integrations/keys.js';
import { pageOf } from '../../../domain/shared/schema.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { pageQuery } from '../params.js';
import { adminErrors, idParam } from './params.js';
import { storedAnswer } from './present.js';

const minted = (v: { key: string; record: IntegrationKeyRecord }) => ({ ...v.record, key: v.key });
const same = <T>(v: T) => v;

/** Monitoring integrations of an organization (extensions §12): PagerDuty routing keys, and how alerts pick their category. */
export const integrationAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const orgPath = z.object({ org_id: idParam });
    const mappingPath = orgPath.extend({ integration: z.enum(MAPPED_INTEGRATIONS) });

    r.post('/orgs/:org_id/integration-keys', {
      config: storedAnswer(201, minted),
      schema: {
        operationId: 'createIntegrationKey',
        tags: ['integrations'],
        summary: 'Mint an integration key (a PagerDuty Events v2 routing_key) for the organization; `key` is shown in this answer only.',
        description:
          'The key (enk_int_ and 32 hex digits) is the routing_key of events sent to POST /api/public/v1/integrations/pagerduty/v2/enqueue: ' +
          'it declares, resolves and posts messages in this organization only. At most 100 active keys per organization. ' +
          'Audit: integration_key.created.',
        headers: idempotencyHeaders,
        params: orgPath,
        body: createIntegrationKeyInput,
        response: {
          201: integrationKeyRecord.extend({ key: z.string().describe('The routing key, shown once.') }),
          ...adminErrors({ 404: 'not_found: no such organization.', 409: 'conflict: the organization already has 100 active keys.' }),
        },
      },
      handler: async (req, reply) =>
        reply.code(201).send(minted(await createIntegrationKey(ctx, callerOf(req), req.params.org_id, req.body, writeOptionsOf(req)))),
    });
    r.get('/orgs/:org_id/integration-keys', {
      schema: {
        operationId: 'listIntegrationKeys',
        tags: ['integrations'],
        summary: "The organization's integration keys, oldest first, revoked ones included (never the keys themselves).",
        params: orgPath,
        querystring: pageQuery,
        response: { 200: pageOf(integrationKeyRecord).meta({ id: 'IntegrationKeyPage' }), ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: (req) => listIntegrationKeys(ctx, callerOf(req), req.params.org_id, req.query),
    });
    r.post('/orgs/:org_id/integration-keys/:key_id/revoke', {
      config: storedAnswer(200, same),
      schema: {
        operationId: 'revokeIntegrationKey',
        tags: ['integrations'],
        summary: 'Revoke an integration key: its events get 400 "Invalid routing key" within seconds on every instance (audit: integration_key.revoked).',
        headers: idempotencyHeaders,
        params: orgPath.extend({ key_id: idParam }),
        response: { 200: integrationKeyRecord, ...adminErrors({ 404: 'not_found: no such organization or key.' }) },
      },
      handler: (req) => revokeIntegrationKey(ctx, callerOf(req), req.params.org_id, req.params.key_id, writeOptionsOf(req)),
    });
    r.get('/orgs/:org_id/integrations/:integration/category-mapping', {
      schema: {
        operationId: 'getIntegrationCategoryMapping',
        tags: ['integrations'],
        summary: "How an integration's alerts pick their category in the organization (alertmanager or pagerduty).",
        params: mappingPath,
        response: { 200: categoryMappingRecord, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: (req) => getCategoryMapping(ctx, callerOf(req), req.params.org_id, req.params.integration),
    });
    r.patch('/orgs/:org_id/integrations/:integration/category-mapping', {
      config: storedAnswer(200, same),
      schema: {
        operationId: 'updateIntegrationCategoryMapping',
        tags: ['integrations'],
        summary: "Set which field picks an integration's category and map its values to categories (audit: integration_mapping.updated).",
        description:
          'An alert lands in the category its field value is mapped to, else the category named like the value (case-insensitively), ' +
          'else Uncategorized. The field is an Alertmanager label (default severity), or a PagerDuty payload field (severity, class, ' +
          'component, group or source; default severity).',
        headers: idempotencyHeaders,
        params: mappingPath,
        body: categoryMappingInput,
        response: { 200: categoryMappingRecord, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: (req) => updateCategoryMapping(ctx, callerOf(req), req.params.org_id, req.params.integration, req.body, writeOptionsOf(req)),
    });
  };
