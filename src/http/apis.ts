import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../context.js';
import { ADMIN_KEYS, type KeyGate, type KeyPolicy, PUBLIC_API_KEYS, requireKey } from '../edge/auth.js';
import { idempotentRoutes } from '../edge/idempotency.js';
import { adminDocument, type OpenApiDocument, publicDocument } from './openapi-documents.js';
import { ADMIN_PREFIX, API_PREFIX } from './prefixes.js';
import { adminKeyAdminRoutes } from './routes/admin/admin-keys.js';
import { apiKeyAdminRoutes } from './routes/admin/api-keys.js';
import { capMappingAdminRoutes } from './routes/admin/cap-mappings.js';
import { categoryAdminRoutes } from './routes/admin/categories.js';
import { connectionQuotaAdminRoutes } from './routes/admin/connection-quotas.js';
import { deviceAdminRoutes } from './routes/admin/devices.js';
import { drillAdminRoutes } from './routes/admin/drills.js';
import { enterpriseAdminRoutes } from './routes/admin/enterprises.js';
import { integrationAdminRoutes } from './routes/admin/integrations.js';
import { meAdminRoutes } from './routes/admin/me.js';
import { orgAdminRoutes } from './routes/admin/orgs.js';
import { partnerAdminRoutes } from './routes/admin/partners.js';
import { userAdminRoutes } from './routes/admin/users.js';
import { webhookAdminRoutes } from './routes/admin/webhooks.js';
import { capRoutes } from './routes/cap.js';
import { directoryRoutes } from './routes/directory.js';
import { emergencyRoutes } from './routes/emergencies.js';
import { integrationRoutes } from './routes/integrations.js';
import { feedRoutes } from './routes/feed.js';
import { meRoutes } from './routes/me.js';
import { messageRoutes } from './routes/messages.js';
import { openApiDocumentRoute } from './routes/openapi-document.js';
import { pagerDutyRoutes } from './routes/pagerduty.js';
import { streamRoutes } from './routes/stream.js';

interface Api {
  prefix: string;
  name: 'public' | 'admin';
  keys: KeyPolicy;
  document: (whole: OpenApiDocument) => OpenApiDocument;
  routes: ((ctx: AppContext) => FastifyPluginAsync)[];
}

/** The two REST APIs: where each is mounted, which keys it takes, and its routes (one file per resource). */
const APIS: Api[] = [
  {
    prefix: API_PREFIX,
    name: 'public',
    keys: PUBLIC_API_KEYS,
    document: publicDocument,
    routes: [emergencyRoutes, directoryRoutes, feedRoutes, streamRoutes, messageRoutes, meRoutes, capRoutes, integrationRoutes],
  },
  {
    prefix: ADMIN_PREFIX,
    name: 'admin',
    keys: ADMIN_KEYS,
    document: adminDocument,
    routes: [
      partnerAdminRoutes,
      enterpriseAdminRoutes,
      orgAdminRoutes,
      connectionQuotaAdminRoutes,
      categoryAdminRoutes,
      capMappingAdminRoutes,
      integrationAdminRoutes,
      userAdminRoutes,
      apiKeyAdminRoutes,
      adminKeyAdminRoutes,
      webhookAdminRoutes,
      deviceAdminRoutes,
      drillAdminRoutes,
      meAdminRoutes,
    ],
  },
];

/** Which routes a process serves (src/roles.ts): the REST APIs whole, and the event streams. */
export interface ServedRoutes {
  apis: boolean;
  eventStreams: boolean;
}

/**
 * Registers each API: its OpenAPI document (no authentication), then its routes behind its keys and Idempotency-Key.
 * A process without the REST APIs but with the event streams (a gateway) serves the stream route alone, behind the
 * same keys; every other path answers 404 there.
 */
export async function registerApis(
  app: FastifyInstance,
  ctx: AppContext,
  gate: KeyGate,
  served: ServedRoutes = { apis: true, eventStreams: true },
): Promise<void> {
  for (const api of APIS) {
    const routes = api.routes.filter((routes) => (routes === streamRoutes ? served.eventStreams : served.apis));
    if (routes.length === 0) continue;
    await app.register(
      async (scope) => {
        if (served.apis) await scope.register(openApiDocumentRoute(app, api.name, api.document));
        await scope.register(async (authed) => {
          authed.addHook('onRequest', requireKey(gate, api.keys));
          idempotentRoutes(authed, ctx.db);
          for (const route of routes) await authed.register(route(ctx));
        });
        // PagerDuty's senders carry their key in the body, not in Authorization: the route checks it once the body is read.
        if (api.name === 'public' && served.apis) await scope.register(pagerDutyRoutes(ctx, gate));
      },
      { prefix: api.prefix },
    );
  }
}
