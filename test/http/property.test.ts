import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { client } from '../helpers/http.js';
import { type OrgFixture, startOrgServer, type TestServer } from '../helpers/server.js';

/** Values shaped like the real fields, wrong in every way fast-check can think of. */
const fieldValue = fc.oneof(
  fc.jsonValue(),
  fc.string({ maxLength: 300 }),
  fc.constantFrom('', 'Fire', 'fire', '2026-11-21T17:44:29.123Z', '2026-13-40T99:99:99Z', '00000000-0000-4000-8000-000000000000'),
  fc.double(),
  fc.integer(),
  fc.record(
    { latitude: fc.oneof(fc.double(), fc.jsonValue()), longitude: fc.oneof(fc.double(), fc.jsonValue()), floorId: fc.jsonValue() },
    { requiredKeys: [] },
  ),
  fc.record({ id: fc.jsonValue(), name: fc.jsonValue() }, { requiredKeys: [] }),
);

const fieldNames = [
  'externalId',
  'categoryId',
  'categoryName',
  'source',
  'description',
  'occurredAt',
  'location',
  'metadata',
  'declaredBy',
  'resolutionNote',
  'resolvedAt',
  'resolvedBy',
  '__proto__',
  'constructor',
];

const body = fc.oneof(
  fc.dictionary(fc.constantFrom(...fieldNames), fieldValue, { maxKeys: 6 }),
  fc.jsonValue(),
  fc.string().map((s) => ({ raw: s })),
);

const queryValue = fc.oneof(
  fc.string({ maxLength: 50 }),
  fc.integer().map(String),
  fc.constantFrom('declared', 'resolved', '2026-01-01T00:00:00Z', '-1', '1e9', 'NaN'),
);
const query = fc.dictionary(fc.constantFrom('status', 'categoryId', 'externalId', 'since', 'until', 'cursor', 'limit', 'other'), queryValue, { maxKeys: 4 });

describe('random input never produces a 5xx', () => {
  let server: TestServer;
  let org: OrgFixture;
  let api: ReturnType<typeof client>;
  let emergencyId: string;

  before(async () => {
    ({ server, org, api } = await startOrgServer());
    emergencyId = (await api.post(`/orgs/${org.orgId}/emergencies`, {})).body.emergencyId;
  });
  after(() => server.close());

  const noServerError = (status: number, what: unknown) => assert.ok(status < 500, `${status} for ${JSON.stringify(what).slice(0, 300)}`);

  it('declare', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await api.post(`/orgs/${org.orgId}/emergencies`, JSON.stringify(b));
        noServerError(res.status, b);
        assert.ok([201, 409, 422].includes(res.status), `${res.status}`);
      }),
      { numRuns: 150 },
    );
  });

  it('recategorize', async () => {
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom(emergencyId, 'x', '00000000-0000-4000-8000-000000000000'), async (b, id) => {
        const res = await api.patch(`/orgs/${org.orgId}/emergencies/${id}`, JSON.stringify(b));
        noServerError(res.status, b);
      }),
      { numRuns: 100 },
    );
  });

  it('resolve', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const fresh = (await api.post(`/orgs/${org.orgId}/emergencies`, {})).body.emergencyId;
        const res = await api.post(`/orgs/${org.orgId}/emergencies/${fresh}/resolutions`, JSON.stringify(b));
        noServerError(res.status, b);
      }),
      { numRuns: 100 },
    );
  });

  it('list', async () => {
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        const res = await api.get(`/orgs/${org.orgId}/emergencies?${new URLSearchParams(q).toString()}`);
        noServerError(res.status, q);
        assert.ok([200, 422].includes(res.status));
      }),
      { numRuns: 150 },
    );
  });

  it('arbitrary path segments and raw bodies', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 40 }), fc.string({ maxLength: 200 }), async (segment, raw) => {
        const res = await api.post(`/orgs/${encodeURIComponent(segment) || 'x'}/emergencies`, raw);
        noServerError(res.status, { segment, raw });
      }),
      { numRuns: 100 },
    );
  });
});
