import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';

/**
 * `/console`: the operator console, a single-page app (console/, built by `npm run build` into
 * dist/console) that calls the public and admin APIs of this process with the key the operator signs
 * in with. Its hashed assets are served from /console/assets/, and every other path under /console
 * answers its index.html, so client-side routes survive a reload. Without a build it answers 503.
 */

/** dist/console beside dist/ and src/ alike: this file runs from src/http (tsx) or dist/http (compiled). */
export const CONSOLE_DIR = fileURLToPath(new URL('../../dist/console/', import.meta.url));

// Scripts and styles from this origin only; thumbnails are blob: URLs of authenticated downloads.
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' blob: data:; media-src 'self' blob:; " +
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/** On every page of a sandbox instance's console (extensions §11): above the app, in words, so no one takes it for live. */
const SANDBOX_BANNER =
  '<div class="sandbox-banner" role="note" style="background:#1565c0;color:#fff;text-align:center;font-weight:700;padding:6px;letter-spacing:.05em">' +
  'SANDBOX: a test instance; nothing here is a live alert</div>';

/** The console's page as this instance serves it: marked on a sandbox instance. */
function servedIndex(html: string, sandbox: boolean): string {
  if (!sandbox) return html;
  return html.replace('<body>', `<body data-environment="sandbox">${SANDBOX_BANNER}`).replace(/<title>([^<]*)<\/title>/, '<title>SANDBOX · $1</title>');
}

export function consolePage(options: { dir?: string; sandbox?: boolean } = {}): FastifyPluginAsync {
  const dir = options.dir ?? CONSOLE_DIR;
  return async (app) => {
    const indexPath = join(dir, 'index.html');
    if (!existsSync(indexPath)) {
      const missing = async (_req: unknown, reply: FastifyReply) =>
        reply
          .code(503)
          .header('retry-after', 60)
          .send({
            detail: {
              error: 'unavailable',
              message: 'The operator console is not built: run "npm run build" (npm ci does it) and restart the service.',
            },
          });
      app.get('/console', { schema: { hide: true } }, missing);
      app.get('/console/*', { schema: { hide: true } }, missing);
      return;
    }
    const index = servedIndex(readFileSync(indexPath, 'utf8'), options.sandbox === true);
    const page = async (_req: unknown, reply: FastifyReply) => reply.headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(index);

    await app.register(fastifyStatic, {
      root: join(dir, 'assets'),
      prefix: '/console/assets/',
      decorateReply: false,
      wildcard: true,
      // File names carry a content hash: a new build never reuses one.
      maxAge: '365d',
      immutable: true,
    });
    app.get('/console', { schema: { hide: true } }, page);
    // Client-side routes (/console/orgs/...): the app reads the path itself.
    app.get('/console/*', { schema: { hide: true } }, page);
  };
}
