import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import {
  type AdminClient,
  createAdminClient,
  createClient,
  type Emergency,
  type ErrorResponse,
  type HTTPValidationError,
  errorCode,
  isErrorResponse,
  isValidationError,
  type PublicClient,
} from '../../clients/typescript/src/index.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** Compile-time check that two types are the same (the test fails to type-check otherwise). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const typeIs = <_T extends true>() => undefined;

describe('TypeScript client: REST', () => {
  let server: TestServer;
  let org: OrgFixture;
  let api: PublicClient;
  let apiKey: string;

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    apiKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    api = createClient({ baseUrl: server.url, apiKey });
  });
  after(() => server.close());

  it('declares, gets, lists, re-categorizes and resolves emergencies with typed answers', async () => {
    const path = { org_id: org.orgId };
    const declared = await api.POST('/orgs/{org_id}/emergencies', {
      params: { path },
      body: { description: 'smoke on floor 2', externalId: 'client-1', location: { floorId: '2' } },
    });
    assert.equal(declared.response.status, 201);
    assert.ok(declared.data, JSON.stringify(declared.error));
    typeIs<Equal<typeof declared.data, Emergency>>();
    const emergency: Emergency = declared.data;
    assert.equal(emergency.status, 'declared');
    assert.equal(emergency.category.name, 'Uncategorized');
    assert.equal(emergency.location?.floorId, '2');

    const got = await api.GET('/orgs/{org_id}/emergencies/{emergency_id}', { params: { path: { ...path, emergency_id: emergency.emergencyId } } });
    assert.equal(got.response.status, 200);
    assert.deepEqual(got.data, emergency);

    const second = await api.POST('/orgs/{org_id}/emergencies', { params: { path }, body: { categoryName: 'Fire', description: 'kitchen' } });
    assert.equal(second.data?.category.name, 'Fire');

    const page1 = await api.GET('/orgs/{org_id}/emergencies', { params: { path, query: { limit: 1 } } });
    assert.equal(page1.response.status, 200);
    assert.ok(page1.data);
    typeIs<Equal<(typeof page1.data.items)[number], Emergency>>();
    assert.equal(page1.data.items.length, 1);
    assert.ok(page1.data.nextCursor);
    const page2 = await api.GET('/orgs/{org_id}/emergencies', { params: { path, query: { limit: 1, cursor: page1.data.nextCursor } } });
    assert.equal(page2.data?.items.length, 1);
    assert.deepEqual([...page1.data.items, ...page2.data!.items].map((e) => e.emergencyId).sort(), [emergency.emergencyId, second.data!.emergencyId].sort());
    const filtered = await api.GET('/orgs/{org_id}/emergencies', { params: { path, query: { externalId: 'client-1' } } });
    assert.deepEqual(
      filtered.data?.items.map((e) => e.emergencyId),
      [emergency.emergencyId],
    );

    const recategorized = await api.PATCH('/orgs/{org_id}/emergencies/{emergency_id}', {
      params: { path: { ...path, emergency_id: emergency.emergencyId } },
      body: { categoryName: 'Medical' },
    });
    assert.equal(recategorized.data?.status, 'categorized');
    assert.equal(recategorized.data?.category.name, 'Medical');
    const resolved = await api.POST('/orgs/{org_id}/emergencies/{emergency_id}/resolutions', {
      params: { path: { ...path, emergency_id: emergency.emergencyId } },
      body: { resolutionNote: 'all clear' },
    });
    assert.equal(resolved.response.status, 201);
    assert.equal(resolved.data?.status, 'resolved');
    assert.equal(resolved.data?.resolutionNote, 'all clear');

    const categories = await api.GET('/orgs/{org_id}/emergencies/categories', { params: { path } });
    assert.deepEqual(categories.data?.items.map((c) => c.name).sort(), ['Fire', 'Medical', 'Uncategorized']);
  });

  it('surfaces error answers typed: 422 validation, 404 and 409 error bodies, 401', async () => {
    const path = { org_id: org.orgId };
    const invalid = await api.POST('/orgs/{org_id}/emergencies', { params: { path }, body: { categoryName: 'No such category' } });
    assert.equal(invalid.response.status, 422);
    assert.equal(invalid.data, undefined);
    assert.ok(invalid.error);
    assert.ok(isValidationError(invalid.error), JSON.stringify(invalid.error));
    // Narrowed to HTTPValidationError: detail is the list of problems.
    const problem = invalid.error.detail[0]!;
    assert.equal(problem.type, 'category_not_found');
    assert.equal(problem.loc[0], 'body');
    assert.equal(errorCode(invalid.error), 'validation_error');

    const missing = await api.GET('/orgs/{org_id}/emergencies/{emergency_id}', {
      params: { path: { ...path, emergency_id: '00000000-0000-4000-8000-000000000000' } },
    });
    assert.equal(missing.response.status, 404);
    // Any documented error body of the route; narrowed to ErrorResponse by isErrorResponse.
    const documented: ErrorResponse | HTTPValidationError | undefined = missing.error;
    assert.ok(documented);
    assert.ok(isErrorResponse(missing.error), JSON.stringify(missing.error));
    assert.equal(missing.error.detail.error, 'emergency_not_found');
    assert.equal(typeof missing.error.detail.message, 'string');

    const first = await api.POST('/orgs/{org_id}/emergencies', { params: { path }, body: { externalId: 'dup-1' } });
    assert.equal(first.response.status, 201);
    const duplicate = await api.POST('/orgs/{org_id}/emergencies', { params: { path }, body: { externalId: 'dup-1' } });
    assert.equal(duplicate.response.status, 409);
    assert.equal(errorCode(duplicate.error), 'external_id_conflict');
    assert.ok(isErrorResponse(duplicate.error));
    assert.equal(duplicate.error.detail.emergencyId, first.data?.emergencyId);

    const stranger = createClient({ baseUrl: `${server.url}/api/public/v1/`, apiKey: 'enk_live_00000000' });
    const refused = await stranger.GET('/orgs/{org_id}/emergencies', { params: { path } });
    assert.equal(refused.response.status, 401);
    assert.equal(errorCode(refused.error), 'unauthenticated');
  });

  it('passes typed header parameters: an Idempotency-Key replays the stored answer', async () => {
    const init = {
      params: { path: { org_id: org.orgId }, header: { 'idempotency-key': `client-${Date.now()}` } },
      body: { description: 'retried declare' },
    };
    const first = await api.POST('/orgs/{org_id}/emergencies', init);
    const retry = await api.POST('/orgs/{org_id}/emergencies', init);
    assert.equal(first.response.status, 201);
    assert.equal(retry.response.status, 201);
    assert.equal(retry.response.headers.get('idempotent-replayed'), 'true');
    assert.equal(retry.data?.emergencyId, first.data?.emergencyId);
  });

  it('rejects wrong paths, parameters and bodies at compile time', () => {
    // Never called: these lines only have to fail to type-check.
    const unused = (client: PublicClient) => {
      // @ts-expect-error no such path
      void client.GET('/orgs/{org_id}/emergency');
      // @ts-expect-error the path parameter org_id is required
      void client.GET('/orgs/{org_id}/emergencies', { params: { path: {} } });
      // @ts-expect-error status is an enum
      void client.GET('/orgs/{org_id}/emergencies', { params: { path: { org_id: 'x' }, query: { status: 'open' } } });
      // @ts-expect-error location is an object
      void client.POST('/orgs/{org_id}/emergencies', { params: { path: { org_id: 'x' } }, body: { location: { floorId: 2 } } });
    };
    assert.equal(typeof unused, 'function');
  });

  describe('admin client', () => {
    let admin: AdminClient;
    before(async () => {
      const { key } = await createAdminKey(server.ctx, operatorCaller(), { name: 'client test', subject: { type: 'instance' } });
      admin = createAdminClient({ baseUrl: server.url, adminKey: key });
    });

    it('builds a tenant tree and mints an API key the public client then uses', async () => {
      const partner = await admin.POST('/partners', { body: { name: 'Client Partner' } });
      assert.equal(partner.response.status, 201);
      assert.ok(partner.data);
      const enterprise = await admin.POST('/partners/{partner_id}/enterprises', {
        params: { path: { partner_id: partner.data.partnerId } },
        body: { name: 'Client Enterprise' },
      });
      assert.ok(enterprise.data);
      const created = await admin.POST('/enterprises/{enterprise_id}/orgs', {
        params: { path: { enterprise_id: enterprise.data.enterpriseId } },
        body: { name: 'Client Org' },
      });
      assert.equal(created.response.status, 201);
      const orgId = created.data!.orgId;
      const key = await admin.POST('/api-keys', {
        body: { name: 'from the admin client', subject: { type: 'org', id: orgId }, permissions: ['read', 'write'] },
      });
      assert.equal(key.response.status, 201, JSON.stringify(key.error));
      assert.ok(key.data?.key);

      const tenant = createClient({ baseUrl: server.url, apiKey: key.data.key });
      const declared = await tenant.POST('/orgs/{org_id}/emergencies', { params: { path: { org_id: orgId } }, body: { description: 'first' } });
      assert.equal(declared.response.status, 201);
      assert.equal(declared.data?.orgId, orgId);
    });

    it('is refused with an API key (401, typed)', async () => {
      const wrong = createAdminClient({ baseUrl: server.url, adminKey: apiKey });
      const res = await wrong.GET('/partners');
      assert.equal(res.response.status, 401);
      assert.equal(errorCode(res.error), 'unauthenticated');
    });
  });
});
