import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { startTestServer, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

/** Both OpenAPI documents pass Redocly's recommended rules (redocly.yaml) with no error and no warning. */
describe('OpenAPI documents', () => {
  let server: TestServer;
  let dir: string;
  const documents: Record<string, any> = {};

  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
    dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
    for (const api of ['public', 'admin']) {
      documents[api] = await (await fetch(`${server.url}/api/${api}/v1/openapi.json`)).json();
      writeFileSync(join(dir, `${api}.json`), JSON.stringify(documents[api]));
    }
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const api of ['public', 'admin']) {
    it(`${api}: 0 errors and 0 warnings under redocly lint (recommended)`, async () => {
      const { stdout } = await run(
        join(ROOT, 'node_modules/.bin/redocly'),
        ['lint', join(dir, `${api}.json`), '--config', join(ROOT, 'redocly.yaml'), '--format', 'json'],
        {
          cwd: ROOT,
        },
      ).catch((err: { stdout: string }) => ({ stdout: err.stdout }));
      const report = JSON.parse(stdout.slice(stdout.indexOf('{')));
      const problems = report.problems.map((p: { ruleId: string; message: string }) => `${p.ruleId}: ${p.message}`);
      assert.deepEqual({ errors: report.totals.errors, warnings: report.totals.warnings, problems }, { errors: 0, warnings: 0, problems: [] });
      await SwaggerParser.validate(structuredClone(documents[api]));
    });

    it(`${api}: every operation has a description, every JSON response an example and X-Request-Id`, () => {
      for (const [path, item] of Object.entries(documents[api].paths as Record<string, Record<string, any>>)) {
        for (const [method, op] of Object.entries(item)) {
          assert.ok(op.description, `${method} ${path} description`);
          for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
            assert.ok(response.headers?.['X-Request-Id'], `${method} ${path} ${status} X-Request-Id`);
            const media = response.content?.['application/json'];
            if (media) assert.notEqual(media.example, undefined, `${method} ${path} ${status} example`);
          }
        }
      }
    });
  }

  it('public: describes the webhook deliveries and the device frames, the write errors and the rate-limit headers', () => {
    const doc = documents.public;
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [
      'device-stream-frame',
      'drill.completed',
      'emergency.categorized',
      'emergency.declared',
      'emergency.delivery_completed',
      'emergency.delivery_overdue',
      'emergency.resolved',
      'webhook.ping',
    ]);
    assert.equal(doc.webhooks['webhook.ping'].post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/WebhookPing');
    const overdueExample = doc.webhooks['emergency.delivery_overdue'].post.requestBody.content['application/json'].example;
    assert.deepEqual(Object.keys(overdueExample.data).sort(), [...Object.keys(doc.components.schemas.DeliveryOverdueData.properties)].sort());
    assert.equal(doc.webhooks['emergency.declared'].post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/EventEnvelope');
    for (const [path, method] of [
      ['/orgs/{org_id}/emergencies', 'post'],
      ['/orgs/{org_id}/emergencies/{emergency_id}', 'patch'],
      ['/orgs/{org_id}/emergencies/{emergency_id}/resolutions', 'post'],
    ] as const) {
      const responses = doc.paths[path][method].responses;
      for (const status of ['400', '401', '403', '413', '415', '422', '429', '500', '503']) assert.ok(responses[status], `${method} ${path} ${status}`);
      assert.ok(responses['429'].headers['Retry-After']);
      assert.ok(responses['401'].headers['WWW-Authenticate']);
    }
    const list = doc.paths['/orgs/{org_id}/emergencies'].get.responses['200'];
    assert.ok(list.headers['RateLimit-Remaining']);
    assert.notEqual(list.description, 'Default Response');
    assert.ok(
      !Object.keys(doc.components.schemas).some((name) => name.endsWith('Input') && doc.components.schemas[name.slice(0, -5)]),
      'one component per schema',
    );
  });

  it('answers 406 to a client that does not accept JSON', async () => {
    const res = await fetch(`${server.url}/api/public/v1/openapi.json`, { headers: { accept: 'text/html' } });
    assert.equal(res.status, 406);
    assert.equal((await res.json()).detail.error, 'not_acceptable');
    assert.equal((await fetch(`${server.url}/api/public/v1/openapi.json`, { headers: { accept: 'text/html,*/*;q=0.8' } })).status, 200);
  });
});
