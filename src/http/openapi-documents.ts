/**
 * One route table, two documents: the public API's (`/api/public/v1/openapi.json`) and the admin
 * API's (`/api/admin/v1/openapi.json`), split by path prefix from the one description the framework
 * builds. Public paths are already relative to their server (see the swagger transform); admin paths
 * are made relative to theirs here.
 */

export interface OpenApiDocument {
  openapi: string;
  info: Record<string, unknown>;
  servers?: { url: string }[];
  paths: Record<string, unknown>;
  components?: Record<string, unknown>;
  [key: string]: unknown;
}

const ADMIN = '/api/admin/v1';

export function publicDocument(doc: OpenApiDocument): OpenApiDocument {
  return { ...doc, paths: Object.fromEntries(Object.entries(doc.paths).filter(([path]) => !path.startsWith(ADMIN))) };
}

export function adminDocument(doc: OpenApiDocument): OpenApiDocument {
  const paths = Object.fromEntries(
    Object.entries(doc.paths).flatMap(([path, item]) => (path.startsWith(ADMIN) ? [[path.slice(ADMIN.length) || '/', item]] : [])),
  );
  const components = (doc.components ?? {}) as { securitySchemes?: Record<string, unknown> };
  return {
    ...doc,
    info: {
      title: 'Emergency Notification Admin API',
      version: (doc.info as { version?: string }).version ?? '1.0.0',
      description:
        'Partners, enterprises, organizations, categories, users, API keys, admin keys, webhooks and devices: everything the admin CLI does. ' +
        'Every request except GET /openapi.json carries Authorization: Bearer <ADMIN_KEY> (enk_adm_...). A secret, token or key appears only in ' +
        'the answer that created or rotated it.',
    },
    servers: [{ url: ADMIN }],
    paths,
    components: { ...components, securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'enk_adm_ + 8 hex + 64 hex' } } },
  };
}
