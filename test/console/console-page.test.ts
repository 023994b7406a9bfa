import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import { CONSOLE_DIR, consolePage } from '../../src/http/console-page.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** /console serves the built single-page app (npm run build puts it in dist/console). */
describe('/console', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
  });
  after(() => server.close());

  it('answers index.html at /console, /console/ and every client-side route, with a strict content policy', async () => {
    for (const path of ['/console', '/console/', '/console/orgs/0b6c0f7e-0000-4000-8000-000000000000/devices']) {
      const res = await fetch(`${server.url}${path}`);
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'self'/);
      assert.match(csp, /connect-src 'self'/);
      const html = await res.text();
      assert.match(html, /<div id="app">/);
      assert.match(html, /src="\/console\/assets\/index-[\w-]+\.js"/);
      assert.equal(/https?:\/\//.test(html), false, 'nothing from another origin');
    }
  });

  it('serves the hashed assets as immutable and 404s an unknown one', async () => {
    const files = readdirSync(join(CONSOLE_DIR, 'assets')).filter((f) => f.endsWith('.js') || f.endsWith('.css'));
    assert.ok(files.length >= 2);
    for (const file of files) {
      const res = await fetch(`${server.url}/console/assets/${file}`);
      assert.equal(res.status, 200, file);
      assert.match(res.headers.get('cache-control') ?? '', /immutable/);
      const body = await res.text();
      assert.equal(/https?:\/\/(?!www\.w3\.org)[a-z]/i.test(body.replace(/\/\/# sourceMappingURL.*/g, '')), false, `${file} loads nothing from elsewhere`);
    }
    assert.equal((await fetch(`${server.url}/console/assets/nope.js`)).status, 404);
  });

  it('answers 503 with a clear message when the console was not built', async () => {
    const app = Fastify();
    await app.register(consolePage({ dir: '/nonexistent/console' }));
    for (const url of ['/console', '/console/orgs/x']) {
      const res = await app.inject({ url });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().detail.error, 'unavailable');
      assert.match(res.json().detail.message, /not built: run "npm run build"/);
    }
    await app.close();
  });
});
