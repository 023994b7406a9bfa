import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { GRANTS, type Grant, PERMISSIONS, permissionsOf } from '../../src/domain/access/permissions.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { example } from '../cap/support.js';
import { client } from '../helpers/http.js';
import { connectMcp } from '../helpers/mcp.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

interface Operation {
  operationId: string;
  method: string;
  path: string;
  /** The permission the public OpenAPI document names for it, or null for "any valid key" (or none). */
  permission: string | null;
}

/** A request each operation accepts when the key may make it (so that a refusal can only be the permission's). */
const bodies: Record<string, { body: string; type: string }> = {
  declareEmergency: { body: JSON.stringify({ description: 'permission table' }), type: 'application/json' },
  recategorizeEmergency: { body: JSON.stringify({ categoryName: 'Medical' }), type: 'application/json' },
  resolveEmergency: { body: JSON.stringify({ resolutionNote: 'permission table' }), type: 'application/json' },
  postMessage: { body: JSON.stringify({ content: 'permission table' }), type: 'application/json' },
  ingestCapAlert: { body: example('a2-severe-thunderstorm-warning'), type: 'application/cap+xml' },
  receiveAlertmanagerWebhook: { body: JSON.stringify({ version: '4', status: 'firing', receiver: 'permission table', alerts: [] }), type: 'application/json' },
};

describe('granular permissions: every REST route and every tool, for each grant', () => {
  let server: TestServer;
  let org: OrgFixture;
  let operations: Operation[];
  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    const doc = (await (await fetch(`${server.base}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string; summary?: string }>>;
    };
    operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => {
        const named = /\(permission: ([a-z]+:[a-z]+)\)/.exec(op.summary ?? '')?.[1];
        // PagerDuty's senders authenticate with an integration key in the body, which no API key is (400 invalid event).
        const anyKey = /\((any valid key|no authentication|an integration key as routing_key)\)/.test(op.summary ?? '');
        assert.ok(named || anyKey, `${op.operationId} names the permission it needs in its summary`);
        if (named) assert.ok((PERMISSIONS as readonly string[]).includes(named), `${op.operationId}: ${named} is a permission`);
        return { operationId: op.operationId, method: method.toUpperCase(), path, permission: named ?? null };
      }),
    );
    // Resolving last: an emergency resolved earlier would change what the other writes answer.
    operations.sort((a, b) => Number(a.operationId === 'resolveEmergency') - Number(b.operationId === 'resolveEmergency'));
  });
  after(() => server.close());

  /** A key holding `grant` alone, what it amounts to, and a fresh emergency (declared with a full key) for its calls. */
  const grantFixture = async (grant: Grant) => {
    const full = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: [grant] });
    const emergencyId = (await full.post(`/orgs/${org.orgId}/emergencies`, { description: `for ${grant}` })).body.emergencyId as string;
    return { held: permissionsOf([grant]), key, emergencyId };
  };

  it('each route answers 403 permission_denied exactly when the key lacks the permission its document names', async () => {
    const mismatches: string[] = [];
    for (const grant of GRANTS) {
      const { held, key, emergencyId } = await grantFixture(grant);
      for (const op of operations) {
        const url =
          server.base +
          op.path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'org_id' ? org.orgId : name === 'emergency_id' ? emergencyId : randomUUID()));
        const request = bodies[op.operationId];
        const abort = new AbortController();
        const res = await fetch(url, {
          method: op.method,
          signal: abort.signal,
          headers: {
            authorization: `Bearer ${key}`,
            ...(request ? { 'content-type': request.type } : {}),
            ...(op.operationId === 'streamEvents' ? { accept: 'text/event-stream' } : {}),
          },
          body: request?.body,
        });
        const text = op.operationId === 'streamEvents' && res.status === 200 ? '' : await res.text();
        abort.abort();
        const allowed = op.permission === null || held.has(op.permission as never);
        const denied = res.status === 403 && JSON.parse(text).detail?.error === 'permission_denied';
        if (allowed ? res.status === 403 || res.status >= 500 : !denied) {
          mismatches.push(`${grant} ${op.operationId}: ${res.status} ${text.slice(0, 120)}`);
        }
      }
    }
    assert.deepEqual(mismatches, []);
    assert.ok(operations.length >= 19, `${operations.length} operations`);
  });

  it('each tool is listed to, and callable by, exactly the keys holding the permission its description names', async () => {
    const everyTool = (await connectMcp(server.url, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key, { listTools: false }))
      .client;
    const all = (await everyTool.listTools()).tools;
    await everyTool.close();
    const mismatches: string[] = [];
    for (const grant of GRANTS) {
      const { held, key, emergencyId } = await grantFixture(grant);
      const mcp = await connectMcp(server.url, key, { listTools: false });
      const listed = new Set((await mcp.client.listTools()).tools.map((t) => t.name));
      const args: Record<string, Record<string, unknown>> = {
        create_emergency: { orgId: org.orgId, description: 'permission table' },
        update_emergency: { orgId: org.orgId, emergencyId, categoryName: 'Medical' },
        resolve_emergency: { orgId: org.orgId, emergencyId },
        get_emergency: { orgId: org.orgId, emergencyId },
        get_emergency_receipts: { orgId: org.orgId, emergencyId },
      };
      for (const tool of [...all].sort((a, b) => Number(a.name === 'resolve_emergency') - Number(b.name === 'resolve_emergency'))) {
        const permission = /Permission: ([a-z]+:[a-z]+)\./.exec(tool.description ?? '')?.[1];
        assert.ok(permission && (PERMISSIONS as readonly string[]).includes(permission), `${tool.name} names its permission`);
        const allowed = held.has(permission as never);
        if (listed.has(tool.name) !== allowed) mismatches.push(`${grant} ${tool.name}: listed ${listed.has(tool.name)}`);
        const { result, json } = await mcp.call(tool.name, args[tool.name] ?? { orgId: org.orgId });
        const denied = result.isError === true && json.error === 'permission_denied';
        if (allowed === denied || (allowed && result.isError)) mismatches.push(`${grant} ${tool.name}: ${JSON.stringify(json).slice(0, 120)}`);
      }
      await mcp.close();
    }
    assert.deepEqual(mismatches, []);
  });

  it('the admin API mints keys of any grants and refuses values that are not grants (422); GET /me shows the grants as given', async () => {
    const admin = client(
      `${server.url}/api/admin/v1`,
      (await createAdminKey(server.ctx, operatorCaller(), { name: 'root', subject: { type: 'instance' } })).key,
    );
    const grants: Grant[] = ['emergencies:read', 'messages:write'];
    const made = await admin.post('/api-keys', { name: 'granular', subject: { type: 'org', id: org.orgId }, permissions: grants });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.deepEqual(made.body.permissions, grants);
    assert.deepEqual((await client(server.base, made.body.key).get('/me')).body.permissions, grants);
    for (const wrong of [['emergencies:delete'], ['admin'], ['read', 'audit:write']]) {
      const refused = await admin.post('/api-keys', { name: 'wrong', subject: { type: 'org', id: org.orgId }, permissions: wrong });
      assert.equal(refused.status, 422, `${wrong.join()}: ${refused.status}`);
    }
  });
});
