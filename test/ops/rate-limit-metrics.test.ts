import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, orgApi, type OrgFixture, startTestServer, TEST_ENV, type TestServer } from '../helpers/server.js';

describe('rate limiting and metrics', () => {
  let server: TestServer;
  let org: OrgFixture;

  before(async () => {
    server = await startTestServer({ RATE_LIMIT_PER_KEY: '5' });
    org = await createOrgTree(server.ctx);
  });
  after(() => server.close());

  it('allows a burst of twice the rate per key, then answers 429 with Retry-After and RateLimit headers', async () => {
    const api = await orgApi(server, org.orgId);
    const first = await api.get(`/orgs/${org.orgId}/emergencies`);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('ratelimit-limit'), '10');
    assert.ok(Number(first.headers.get('ratelimit-remaining')) >= 8);
    // Concurrent requests arrive faster than the bucket refills, whatever the machine's speed.
    const burst = await Promise.all(Array.from({ length: 30 }, () => api.get(`/orgs/${org.orgId}/emergencies`)));
    const limited = burst.find((r) => r.status === 429);
    assert.ok(limited, `statuses ${burst.map((r) => r.status)}`);
    assert.ok(burst.filter((r) => r.status === 200).length <= 10 + 5, 'no more than the burst plus what refilled');
    assert.equal(limited.body.detail.error, 'rate_limited');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal(limited.headers.get('ratelimit-remaining'), '0');

    const other = await orgApi(server, org.orgId);
    assert.equal((await other.get(`/orgs/${org.orgId}/emergencies`)).status, 200, 'buckets are per key');

    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await api.get(`/orgs/${org.orgId}/emergencies`)).status, 200, 'tokens refill at the configured rate');
  });

  it('does not count unauthenticated requests against a key', async () => {
    const res = await client(server.base).get(`/orgs/${org.orgId}/emergencies`);
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('ratelimit-limit'), null);
  });

  it('exposes Prometheus metrics with per-route request counts and latencies', async () => {
    const api = await orgApi(server, org.orgId);
    await api.post(`/orgs/${org.orgId}/emergencies`, {});
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ENV.METRICS_TOKEN}` } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /text\/plain/);
    const text = await res.text();
    assert.match(text, /http_requests_total\{method="POST",route="\/api\/public\/v1\/orgs\/:org_id\/emergencies",status="201"\} 1/);
    assert.match(text, /http_request_duration_seconds_bucket\{le="[^"]+",method="POST",route="\/api\/public\/v1\/orgs\/:org_id\/emergencies",status="201"\}/);
    assert.match(text, /http_requests_total\{method="GET",route="\/api\/public\/v1\/orgs\/:org_id\/emergencies",status="429"\}/);
    assert.match(text, /process_resident_memory_bytes/);
    assert.ok(!text.includes('enk_live_'));
  });
});

describe('rate limiting on the tool server', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ RATE_LIMIT_PER_KEY: '1' });
  });
  after(() => server.close());

  it('answers 429 rate_limited with Retry-After before reading JSON-RPC', async () => {
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/list' }),
      });
      statuses.push(res.status);
      if (res.status === 429) limited = res;
      else await res.text();
    }
    assert.deepEqual(statuses.slice(0, 2), [200, 200]);
    assert.ok(limited, `statuses ${statuses}`);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal(((await limited.json()) as any).detail.error, 'rate_limited');
  });
});
