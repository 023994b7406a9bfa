import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';

/**
 * `/docs`: an interactive reference of the public and the admin API (Scalar's standalone bundle,
 * served by this process, so it works with no internet: fonts, the proxy and telemetry are off).
 * "Test request" takes a key in its authentication panel and calls this server.
 */

// `npm run build` copies the bundle out of its npm package, a development dependency: the package
// brings a browser framework and its tooling that a production install has no use for.
const scalarDir = fileURLToPath(new URL('../../dist/docs/', import.meta.url));

const CONFIG = {
  sources: [
    { title: 'Public API', slug: 'public', url: '/api/public/v1/openapi.json' },
    { title: 'Admin API', slug: 'admin', url: '/api/admin/v1/openapi.json' },
  ],
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: false,
  showDeveloperTools: 'never',
  agent: { disabled: true },
  mcp: { disabled: true },
  authentication: { preferredSecurityScheme: 'bearer' },
};

const INIT_SCRIPT = `Scalar.createApiReference('#app', Object.assign(${JSON.stringify(CONFIG)}, { baseServerURL: window.location.origin }));`;

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>emergency-api reference</title>
    <style>body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }</style>
  </head>
  <body>
    <div id="app"></div>
    <script src="/docs/assets/standalone.js"></script>
    <script>${INIT_SCRIPT}</script>
  </body>
</html>
`;

/**
 * The page may not be framed (clickjacking a key typed into it), and runs the bundle from this origin
 * and its one inline script (by hash) only. Scalar sets styles inline and calls this origin, nothing else.
 */
const SECURITY_HEADERS = {
  'content-security-policy':
    `default-src 'self'; script-src 'self' 'sha256-${createHash('sha256').update(INIT_SCRIPT).digest('base64')}'; ` +
    "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; " +
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export const docsPage: FastifyPluginAsync = async (app) => {
  await app.register(fastifyStatic, {
    root: scalarDir,
    prefix: '/docs/assets/',
    decorateReply: false,
    allowedPath: (path) => path === '/standalone.js',
    maxAge: '1h',
  });
  const page = async (_req: unknown, reply: import('fastify').FastifyReply) => reply.headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(PAGE);
  app.get('/docs', { schema: { hide: true } }, page);
  for (const alias of ['/redoc', '/reference']) app.get(alias, { schema: { hide: true } }, async (_req, reply) => reply.redirect('/docs', 301));
};
