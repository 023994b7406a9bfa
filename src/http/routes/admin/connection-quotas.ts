import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import {
  connectionQuotasInput,
  getOrgConnectionQuotas,
  getPartnerConnectionQuotas,
  orgConnectionQuotasRecord,
  partnerConnectionQuotasRecord,
  updateOrgConnectionQuotas,
  updatePartnerConnectionQuotas,
} from '../../../domain/tenancy/connection-quotas.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { adminErrors, idParam } from './params.js';
import { storedAnswer } from './present.js';

const same = <T>(v: T) => v;

const PER_INSTANCE =
  'Quotas count per instance, like STREAMS_PER_KEY: each instance of a fleet lets the tenant hold this many. Beyond its quota a device ' +
  'upgrade is a 429 `too_many_devices` and a stream a 429 `too_many_streams`, with Retry-After. Whatever its quota, one organization ' +
  "or partner holds at most TENANT_CONNECTION_SHARE of an instance's connections (then 503), so the rest stays free for the others.";

/** The connection quotas of an organization and of a partner (extensions §13). */
export const connectionQuotaAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const orgPath = z.object({ org_id: idParam });
    const partnerPath = z.object({ partner_id: idParam });

    r.get('/orgs/:org_id/connection-quotas', {
      schema: {
        operationId: 'getOrganizationConnectionQuotas',
        tags: ['tenancy'],
        summary: 'The device sockets and event streams an organization may hold on one instance.',
        description: PER_INSTANCE,
        params: orgPath,
        response: { 200: orgConnectionQuotasRecord, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: (req) => getOrgConnectionQuotas(ctx, callerOf(req), req.params.org_id),
    });
    r.patch('/orgs/:org_id/connection-quotas', {
      config: storedAnswer(200, same),
      schema: {
        operationId: 'updateOrganizationConnectionQuotas',
        tags: ['tenancy'],
        summary: "Set an organization's device and stream quotas (admin keys of its partner or of the instance; null: the default).",
        description: `${PER_INSTANCE} In force at once on the instance that answers, within 5 s on the others.`,
        headers: idempotencyHeaders,
        params: orgPath,
        body: connectionQuotasInput,
        response: { 200: orgConnectionQuotasRecord, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: (req) => updateOrgConnectionQuotas(ctx, callerOf(req), req.params.org_id, req.body, writeOptionsOf(req)),
    });
    r.get('/partners/:partner_id/connection-quotas', {
      schema: {
        operationId: 'getPartnerConnectionQuotas',
        tags: ['tenancy'],
        summary: "The device sockets and event streams all of a partner's organizations together may hold on one instance.",
        description: PER_INSTANCE,
        params: partnerPath,
        response: { 200: partnerConnectionQuotasRecord, ...adminErrors({ 404: 'not_found: no such partner.' }) },
      },
      handler: (req) => getPartnerConnectionQuotas(ctx, callerOf(req), req.params.partner_id),
    });
    r.patch('/partners/:partner_id/connection-quotas', {
      config: storedAnswer(200, same),
      schema: {
        operationId: 'updatePartnerConnectionQuotas',
        tags: ['tenancy'],
        summary: "Set a partner's device and stream quotas over all its organizations (instance admin keys only; null: the default).",
        description: `${PER_INSTANCE} In force at once on the instance that answers, within 5 s on the others.`,
        headers: idempotencyHeaders,
        params: partnerPath,
        body: connectionQuotasInput,
        response: { 200: partnerConnectionQuotasRecord, ...adminErrors({ 404: 'not_found: no such partner.' }) },
      },
      handler: (req) => updatePartnerConnectionQuotas(ctx, callerOf(req), req.params.partner_id, req.body, writeOptionsOf(req)),
    });
  };
