import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { client } from '../helpers/http.js';
import { type OrgFixture, startOrgServer, type TestServer } from '../helpers/server.js';

describe('HTTP protocol: errors, request ids, OpenAPI, health', () => {
  let server: TestServer;
  let org: OrgFixture;
  let api: ReturnType<typeof client>;
  let path: string;

  before(async () => {
    ({ server, org, api } = await startOrgServer());
    path = `/orgs/${org.orgId}/emergencies`;
  });
  after(() => server.close());

  it('answers malformed JSON with 422 json_invalid', async () => {
    const res = await api.post(path, '{"description": ');
    assert.equal(res.status, 422);
    assert.equal(res.body.detail[0].type, 'json_invalid');
    assert.deepEqual(res.body.detail[0].loc, ['body']);
  });

  it('answers a non-JSON content type with 415', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await api.post(path, 'description=x', { 'content-type': type });
      assert.equal(res.status, 415, type);
      assert.equal(res.body.detail.error, 'unsupported_media_type');
    }
  });

  it('answers an oversized body with 413', async () => {
    const res = await api.post(path, { description: 'x'.repeat(2 * 1024 * 1024) });
    assert.equal(res.status, 413);
    assert.equal(res.body.detail.error, 'payload_too_large');
  });

  it('answers a missing PATCH body with 422 missing', async () => {
    const declared = await api.post(path, {});
    const res = await api.patch(`${path}/${declared.body.emergencyId}`);
    assert.equal(res.status, 422);
    assert.deepEqual(res.body.detail[0], { loc: ['body'], msg: 'Field required', type: 'missing' });
  });

  it('answers a non-object body with 422', async () => {
    for (const body of ['[]', '"text"', '42', 'null']) {
      const res = await api.post(path, body);
      assert.equal(res.status, 422, body);
      assert.equal(res.body.detail[0].loc[0], 'body');
    }
  });

  it('reports wrong types, ranges, lengths and timestamps field by field', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ externalId: '' }, 'body.externalId', 'too_short'],
      [{ externalId: 'x'.repeat(257) }, 'body.externalId', 'too_long'],
      [{ externalId: 42 }, 'body.externalId', 'string_type'],
      [{ source: 's'.repeat(129) }, 'body.source', 'too_long'],
      [{ description: 'd'.repeat(4001) }, 'body.description', 'too_long'],
      [{ occurredAt: '2026-11-21T10:00:00' }, 'body.occurredAt', 'string_pattern_mismatch'],
      [{ occurredAt: '21/11/2026' }, 'body.occurredAt', 'string_pattern_mismatch'],
      [{ occurredAt: '2026-02-31T10:00:00Z' }, 'body.occurredAt', 'value_error'],
      [{ location: { latitude: 91, longitude: 0 } }, 'body.location.latitude', 'less_than_equal'],
      [{ location: { latitude: 0, longitude: -181 } }, 'body.location.longitude', 'greater_than_equal'],
      [{ location: { latitude: '1', longitude: 0 } }, 'body.location.latitude', 'number_type'],
      [{ location: { floorId: 'f'.repeat(129) } }, 'body.location.floorId', 'too_long'],
      [{ metadata: [1, 2] }, 'body.metadata', 'record_type'],
      [{ metadata: { blob: 'x'.repeat(17 * 1024) } }, 'body.metadata', 'value_error'],
      [{ declaredBy: { name: 'No Id' } }, 'body.declaredBy.id', 'missing'],
      [{ declaredBy: 'someone' }, 'body.declaredBy', 'object_type'],
      [{ categoryId: 'x', categoryName: 'Fire' }, 'body.categoryName', 'value_error'],
    ];
    for (const [body, loc, type] of cases) {
      const res = await api.post(path, body);
      assert.equal(res.status, 422, JSON.stringify(body).slice(0, 80));
      const issue = res.body.detail.find((d: { loc: (string | number)[] }) => d.loc.join('.') === loc);
      assert.ok(issue, `${loc} in ${JSON.stringify(res.body.detail)}`);
      assert.equal(issue.type, type, loc);
      assert.equal(typeof issue.msg, 'string');
    }
  });

  it('echoes a valid X-Request-Id and generates one otherwise', async () => {
    const echoed = await api.get(path, { 'x-request-id': 'trace-abc.123' });
    assert.equal(echoed.headers.get('x-request-id'), 'trace-abc.123');
    const replaced = await api.get(path, { 'x-request-id': 'bad id with spaces' });
    assert.match(replaced.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/);
    const declared = await api.post(path, {}, { 'x-request-id': 'req-for-audit-1' });
    const audit = await api.get(`/orgs/${org.orgId}/audit-logs?eventCategory=emergency&eventType=emergency.declared&limit=1`);
    assert.equal(audit.body.items[0].requestId, 'req-for-audit-1');
    assert.equal(audit.body.items[0].resource.id, declared.body.emergencyId);
  });

  it('answers unknown routes with 404 not_found and a request id', async () => {
    const res = await api.get('/nothing-here');
    assert.equal(res.status, 404);
    assert.equal(res.body.detail.error, 'not_found');
    assert.ok(res.headers.get('x-request-id'));
  });

  it('serves a valid OpenAPI description without authentication', async () => {
    const res = await client(server.base).get('/openapi.json');
    assert.equal(res.status, 200);
    const doc = res.body;
    assert.equal(doc.info.version, '1.0.0');
    await SwaggerParser.validate(structuredClone(doc));
    const ops = Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item as object).map((m) => `${m.toUpperCase()} ${p}`));
    for (const op of [
      'GET /orgs/{org_id}/emergencies/categories',
      'POST /orgs/{org_id}/emergencies',
      'GET /orgs/{org_id}/emergencies',
      'GET /orgs/{org_id}/emergencies/{emergency_id}',
      'PATCH /orgs/{org_id}/emergencies/{emergency_id}',
      'POST /orgs/{org_id}/emergencies/{emergency_id}/resolutions',
      'GET /orgs/{org_id}/users',
      'GET /orgs/{org_id}/audit-logs',
      'GET /orgs',
      'GET /orgs/{org_id}/events',
      'GET /orgs/{org_id}/emergencies/{emergency_id}/events',
      'GET /orgs/{org_id}/devices',
      'GET /orgs/{org_id}/emergencies/{emergency_id}/receipts',
    ]) {
      assert.ok(ops.includes(op), `${op} documented`);
    }
    const declare = doc.paths['/orgs/{org_id}/emergencies'].post;
    for (const status of ['201', '401', '403', '409', '422', '429', '500']) assert.ok(declare.responses[status], `declare documents ${status}`);
    assert.ok(doc.paths['/orgs/{org_id}/emergencies/{emergency_id}'].patch.responses['409']);
    assert.ok(doc.components.schemas.Emergency);
    assert.ok(doc.paths['/orgs/{org_id}/events'].get.responses['410'], 'the feed documents 410 events_expired');
    for (const schema of ['EventEnvelope', 'EmergencyReceipts', 'DeviceStatus', 'Organization']) assert.ok(doc.components.schemas[schema], schema);
    assert.ok(doc.components.schemas.HTTPValidationError);
  });

  it('reports liveness and readiness without authentication', async () => {
    const health = await fetch(`${server.url}/healthz`);
    assert.equal(health.status, 200);
    const ready = await fetch(`${server.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'ready' });
  });
});
