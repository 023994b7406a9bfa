import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startOrgServer, type TestServer } from '../helpers/server.js';

/**
 * Every REST route and every tool, fed text with NUL and lone surrogates, bodies nested hundreds of
 * levels deep, ids of every length and case, cursors and filters of every shape. The one assertion:
 * no answer is a 5xx (for tools: no tool error with a 5xx status). `npm test` sends FUZZ_REQUESTS
 * (default 2,000) requests per database; `npm run test:fuzz` sends 20,000.
 */
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 2000);

function nestedObject(depth: number, leaf: unknown): unknown {
  let value: unknown = leaf;
  for (let i = 0; i < depth; i++) value = i % 3 === 2 ? [value] : { k: value };
  return value;
}

const hostileText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 20 }).map((s) => `${s}\u0000${s}`),
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', '\udfff', '%00', '%zz', "' OR 1=1 --", '"; drop table emergencies; --', '../../etc/passwd', '\\', '💥', ''),
  fc.integer({ min: 100, max: 5000 }).map((n) => 'x'.repeat(n)),
);

const deepValue = fc.tuple(fc.integer({ min: 1, max: 400 }), fc.oneof(hostileText, fc.constant(1))).map(([depth, leaf]) => nestedObject(depth, leaf));

const anyValue = fc.oneof(
  { weight: 3, arbitrary: hostileText },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 2, arbitrary: deepValue },
  { weight: 1, arbitrary: fc.dictionary(hostileText, hostileText, { maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.oneof(fc.double(), fc.integer(), fc.boolean(), fc.constant(null)) },
);

const FIELDS = [
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
  'content',
  'author',
  'attachments',
  'attachment',
  'caption',
  '__proto__',
  'constructor',
];

const plausible = fc.constantFrom<unknown>(
  'Fire',
  'medical',
  '2026-11-21T17:44:29.123Z',
  { latitude: 1, longitude: 2, floorId: 'F\u00002' },
  { id: 'u', name: 'n\u0000' },
  { type: 'user', name: 'x' },
  [{ src: 'https://example.com/a.png', caption: 'c\u0000' }],
  'https://[::127.0.0.1]/x',
  'data:image/png;base64,AAAA',
);

const body = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(fc.constantFrom(...FIELDS), fc.oneof(anyValue, plausible), { maxKeys: 5 }) },
  { weight: 1, arbitrary: anyValue },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }).map((raw) => ({ raw })) },
);

const QUERY_KEYS = [
  'status',
  'categoryId',
  'externalId',
  'since',
  'until',
  'cursor',
  'limit',
  'eventCategory',
  'eventType',
  'actorId',
  'after',
  'emergencyId',
  'detail',
  'other',
];
const query = fc.dictionary(fc.constantFrom(...QUERY_KEYS), hostileText, { maxKeys: 4 });

/** encodeURIComponent throws on lone surrogates; those go out as raw (broken) escapes, which is fine here. */
function encode(segment: string): string {
  try {
    return encodeURIComponent(segment) || 'x';
  } catch {
    return '%ED%A0%80';
  }
}

function queryString(q: Record<string, string>): string {
  return Object.entries(q)
    .map(([k, v]) => `${k}=${encode(v)}`)
    .join('&');
}

type Request = { kind: 'rest'; method: string; path: string; body?: unknown; raw?: string } | { kind: 'mcp'; message: unknown };

describe('fuzz: every route and tool, zero 5xx', () => {
  let server: TestServer;
  let org: OrgFixture;
  let other: OrgFixture;
  let key: string;
  let emergencyIds: string[];

  before(async () => {
    let api: ReturnType<typeof client>;
    ({ server, org, api } = await startOrgServer());
    other = await createOrgTree(server.ctx);
    emergencyIds = [];
    for (const description of ['one', 'two']) emergencyIds.push((await api.post(`/orgs/${org.orgId}/emergencies`, { description })).body.emergencyId);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
  });
  after(() => server.close());

  it(`${REQUESTS} requests`, { timeout: 30 * 60_000 }, async () => {
    const orgId = fc.oneof(
      { weight: 6, arbitrary: fc.constant(org.orgId) },
      { weight: 2, arbitrary: fc.constant(org.orgId.toUpperCase()) },
      { weight: 1, arbitrary: fc.constant(other.orgId) },
      { weight: 1, arbitrary: fc.uuid() },
      { weight: 1, arbitrary: hostileText },
    );
    const emergencyId = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...emergencyIds) },
      { weight: 1, arbitrary: fc.uuid() },
      { weight: 2, arbitrary: hostileText },
    );
    const rest = (method: string, path: fc.Arbitrary<string>, withBody: boolean): fc.Arbitrary<Request> =>
      withBody ? fc.tuple(path, body).map(([p, b]) => ({ kind: 'rest', method, path: p, body: b })) : path.map((p) => ({ kind: 'rest', method, path: p }));
    const o = orgId.map(encode);
    const e = emergencyId.map(encode);
    const routes: fc.Arbitrary<Request>[] = [
      rest(
        'GET',
        fc.tuple(o, query).map(([a, q]) => `/orgs/${a}/emergencies/categories?${queryString(q)}`),
        false,
      ),
      rest(
        'POST',
        o.map((a) => `/orgs/${a}/emergencies`),
        true,
      ),
      rest(
        'GET',
        fc.tuple(o, query).map(([a, q]) => `/orgs/${a}/emergencies?${queryString(q)}`),
        false,
      ),
      rest(
        'GET',
        fc.tuple(o, e).map(([a, b]) => `/orgs/${a}/emergencies/${b}`),
        false,
      ),
      rest(
        'PATCH',
        fc.tuple(o, e).map(([a, b]) => `/orgs/${a}/emergencies/${b}`),
        true,
      ),
      rest(
        'POST',
        fc.tuple(o, e).map(([a, b]) => `/orgs/${a}/emergencies/${b}/resolutions`),
        true,
      ),
      rest(
        'POST',
        fc.tuple(o, e).map(([a, b]) => `/orgs/${a}/emergencies/${b}/messages`),
        true,
      ),
      rest(
        'GET',
        fc.tuple(o, query).map(([a, q]) => `/orgs/${a}/users?${queryString(q)}`),
        false,
      ),
      rest(
        'GET',
        fc.tuple(o, query).map(([a, q]) => `/orgs/${a}/audit-logs?${queryString(q)}`),
        false,
      ),
      rest(
        'GET',
        query.map((q) => `/orgs?${queryString(q)}`),
        false,
      ),
      rest(
        'GET',
        fc.tuple(o, query).map(([a, q]) => `/orgs/${a}/events?${queryString(q)}`),
        false,
      ),
      rest(
        'GET',
        fc.tuple(o, e, query).map(([a, b, q]) => `/orgs/${a}/emergencies/${b}/events?${queryString(q)}`),
        false,
      ),
      rest(
        'GET',
        fc.tuple(o, query).map(([a, q]) => `/orgs/${a}/devices?${queryString(q)}`),
        false,
      ),
      rest(
        'GET',
        fc.tuple(o, e, query).map(([a, b, q]) => `/orgs/${a}/emergencies/${b}/messages?${queryString(q)}`),
        false,
      ),
      rest(
        'GET',
        fc.tuple(o, e, hostileText.map(encode)).map(([a, b, c]) => `/orgs/${a}/emergencies/${b}/attachments/${c}/content`),
        false,
      ),
      rest(
        'GET',
        fc.tuple(o, e, query).map(([a, b, q]) => `/orgs/${a}/emergencies/${b}/receipts?${queryString(q)}`),
        false,
      ),
      fc
        .tuple(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'), fc.array(hostileText.map(encode), { maxLength: 6 }), fc.string({ maxLength: 100 }))
        .map(([method, segments, raw]): Request => ({ kind: 'rest', method, path: `/${segments.join('/')}`, raw: method === 'GET' ? undefined : raw })),
    ];
    const TOOLS = [
      'list_categories',
      'list_emergencies',
      'get_emergency',
      'list_audit_logs',
      'list_events',
      'get_emergency_receipts',
      'create_emergency',
      'update_emergency',
      'resolve_emergency',
    ];
    const toolArguments = fc.tuple(orgId, emergencyId, fc.dictionary(fc.constantFrom(...FIELDS, ...QUERY_KEYS), fc.oneof(anyValue, plausible), { maxKeys: 4 }));
    const toolCall = fc.tuple(fc.constantFrom(...TOOLS), toolArguments).map(
      ([name, [oid, eid, rest]]): Request => ({
        kind: 'mcp',
        message: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { orgId: oid, emergencyId: eid, ...rest } } },
      }),
    );
    const rawRpc = fc.oneof(anyValue, fc.array(anyValue, { maxLength: 3 })).map((message): Request => ({ kind: 'mcp', message }));
    const request = fc.oneof(...routes.map((arbitrary) => ({ weight: 2, arbitrary })), { weight: 6, arbitrary: toolCall }, { weight: 1, arbitrary: rawRpc });

    let sent = 0;
    await fc.assert(
      fc.asyncProperty(request, async (req) => {
        sent++;
        const status = await send(req);
        assert.ok(status < 500, `${status} for ${JSON.stringify(req).slice(0, 400)}`);
      }),
      { numRuns: REQUESTS },
    );
    assert.equal(sent >= REQUESTS, true);
    // The server still answers normally afterwards.
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  });

  /** The HTTP status, or for a tool result the status its error payload names. */
  async function send(req: Request): Promise<number> {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (req.kind === 'rest') {
      const init: RequestInit = { method: req.method, headers };
      if (req.body !== undefined || req.raw !== undefined) {
        init.body = req.raw ?? JSON.stringify(req.body);
        headers['content-type'] = 'application/json';
      }
      const res = await fetch(`${server.base}${req.path}`, init);
      await res.arrayBuffer();
      return res.status;
    }
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-03-26' },
      body: JSON.stringify(req.message),
    });
    const text = await res.text();
    if (res.status !== 200 || !text) return res.status;
    const answers = [JSON.parse(text)].flat() as { result?: { isError?: boolean; content?: { text?: string }[] } }[];
    let worst = res.status;
    for (const answer of answers) {
      if (!answer?.result?.isError) continue;
      const payload = JSON.parse(answer.result.content?.[0]?.text ?? '{}') as { status?: number };
      worst = Math.max(worst, payload.status ?? 0);
    }
    return worst;
  }
});
