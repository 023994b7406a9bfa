import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { client } from '../helpers/http.js';
import { addUser, createOrgTree, mintKey, type OrgFixture, startOrgServer, type TestServer } from '../helpers/server.js';

/**
 * Every REST route of both APIs (public and admin) and every tool, fed text with NUL and lone
 * surrogates, bodies nested hundreds of levels deep, ids of every length and case, cursors crafted to
 * decode to values no column holds, numbers past 2^31 and 2^63, filters of every shape. The one
 * assertion: no answer is a 5xx (for tools: no tool error with a 5xx status). `npm test` sends
 * FUZZ_REQUESTS (default 2,000) requests per database; `npm run test:fuzz` sends 20,000. A second
 * test sends a fixed set of crafted cursors to every list and list tool: each is a 422 `cursor_invalid`.
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
/** Cursor parts no sort column holds: NUL, fractions, integers past int4 and int8, nesting, objects. */
const POISON_PARTS: unknown[] = [
  'x\u0000',
  '\u0000',
  1.5,
  -0.5,
  2 ** 31,
  -(2 ** 31) - 1,
  2 ** 53 + 2,
  2 ** 63,
  -(2 ** 63),
  1e308,
  ['a'],
  [[1]],
  {},
  { a: 1 },
  null,
  true,
];

function base64Of(value: unknown, alphabet: 'base64' | 'base64url'): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString(alphabet);
}

/** Cursors that decode to arrays of plausible and poisoned parts, some well-formed enough to reach a query. */
const craftedCursor = fc
  .tuple(
    fc.array(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...POISON_PARTS) },
        { weight: 2, arbitrary: fc.oneof(fc.string({ maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 20 }), fc.uuid()) },
        { weight: 1, arbitrary: fc.constantFrom('2026-01-01T00:00:00.000Z', 'Org 1', 'Fire', 0, 5, 2 ** 31 - 1) },
        {
          weight: 1,
          arbitrary: fc.oneof(
            fc.integer(),
            fc.double(),
            fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((n) => Number(n)),
          ),
        },
      ),
      { maxLength: 4 },
    ),
    fc.constantFrom<'base64' | 'base64url'>('base64', 'base64url'),
  )
  .map(([parts, alphabet]) => base64Of(parts, alphabet));

/** Integers as text past what an integer (2^31) or bigint (2^63) column holds, and other numbers a column refuses. */
const hugeNumber = fc.constantFrom(
  '2147483647',
  '2147483648',
  '-2147483649',
  '4294967296',
  '9223372036854775807',
  '9223372036854775808',
  '1e21',
  '1.5',
  '0x10',
  '1e400',
);

const queryValue = fc.oneof({ weight: 3, arbitrary: hostileText }, { weight: 2, arbitrary: craftedCursor }, { weight: 1, arbitrary: hugeNumber });
const query = fc.dictionary(fc.constantFrom(...QUERY_KEYS), queryValue, { maxKeys: 4 });

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

/** Admin bodies: the fields of every admin route, with plausible and hostile values. */
const ADMIN_FIELDS = [
  'name',
  'subject',
  'permissions',
  'allowedOrgIds',
  'activeUntilDate',
  'graceHours',
  'url',
  'eventTypes',
  'since',
  'until',
  'devices',
  'firstName',
  'lastName',
  'email',
  'role',
  'status',
  'phoneNumber',
  'color',
  'severity',
  'responseLevel',
];

/** Webhook targets stay on this machine: any URL the fuzzer makes, of any scheme, becomes a closed loopback port. */
function loopbackTargets(value: unknown): unknown {
  if (value && typeof value === 'object' && !Array.isArray(value) && typeof (value as { url?: unknown }).url === 'string') {
    const url = (value as { url: string }).url;
    if (/^\s*[a-z][a-z0-9+.-]*:/i.test(url)) return { ...value, url: 'http://127.0.0.1:9/fuzz' };
  }
  return value;
}

type Request = { kind: 'rest'; method: string; path: string; body?: unknown; raw?: string; admin?: boolean } | { kind: 'mcp'; message: unknown };

describe('fuzz: every route and tool, zero 5xx', () => {
  let server: TestServer;
  let org: OrgFixture;
  let other: OrgFixture;
  let key: string;
  let adminKey: string;
  let emergencyIds: string[];
  /** Ids of every kind the admin routes take, real (of both trees) and victims that may be revoked or deleted. */
  let adminIds: string[];

  before(async () => {
    let api: ReturnType<typeof client>;
    ({ server, org, api } = await startOrgServer());
    other = await createOrgTree(server.ctx);
    emergencyIds = [];
    for (const description of ['one', 'two']) emergencyIds.push((await api.post(`/orgs/${org.orgId}/emergencies`, { description })).body.emergencyId);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    adminKey = (await createAdminKey(server.ctx, operatorCaller(), { name: 'fuzz', subject: { type: 'instance' } })).key;
    const admin = client(`${server.url}/api/admin/v1`, adminKey);
    const webhook = await admin.post('/webhooks', { url: 'http://127.0.0.1:9/fuzz', subject: { type: 'org', id: org.orgId } });
    const device = await admin.post(`/orgs/${org.orgId}/devices`, { name: 'Lobby' });
    const victimKey = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const victimAdmin = await createAdminKey(server.ctx, operatorCaller(), { name: 'victim', subject: { type: 'partner', id: org.partnerId } });
    const user = await addUser(server.ctx, org.orgId, 'Ada', 'Lovelace');
    assert.equal(webhook.status, 201);
    assert.equal(device.status, 201);
    adminIds = [
      org.partnerId,
      org.enterpriseId,
      org.orgId,
      other.partnerId,
      other.orgId,
      org.categories.Fire!,
      webhook.body.webhookId,
      device.body.deviceId,
      victimKey.id,
      victimAdmin.adminKeyId,
      user.userId,
      ...emergencyIds,
    ];
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
    const adminId = fc
      .oneof(
        { weight: 5, arbitrary: fc.constantFrom(...adminIds) },
        { weight: 1, arbitrary: fc.constantFrom(...adminIds).map((id) => id.toUpperCase()) },
        { weight: 1, arbitrary: fc.uuid() },
        { weight: 2, arbitrary: hostileText },
      )
      .map(encode);
    const adminPlausible = fc.constantFrom<unknown>(
      { type: 'org', id: org.orgId },
      { type: 'partner', id: org.partnerId },
      { type: 'enterprise', id: org.enterpriseId.toUpperCase() },
      { type: 'instance' },
      { type: 'org', id: 'x\u0000' },
      ['read', 'write'],
      [org.orgId, other.orgId],
      ['emergency.declared'],
      [{ name: 'Gym' }, { name: 'n\u0000' }],
      '2026-01-01T00:00:00Z',
      'responder',
      'disabled',
      'ada@example.test',
      '#D32F2F',
      5,
      2 ** 31,
      1.5,
      'http://127.0.0.1:9/fuzz',
    );
    const adminBody = fc
      .oneof(
        { weight: 4, arbitrary: fc.dictionary(fc.constantFrom(...ADMIN_FIELDS), fc.oneof(anyValue, adminPlausible), { maxKeys: 5 }) },
        { weight: 1, arbitrary: anyValue },
      )
      .map(loopbackTargets);
    const admin = (method: string, path: fc.Arbitrary<string>, withBody: boolean): fc.Arbitrary<Request> =>
      withBody
        ? fc.tuple(path, adminBody).map(([p, b]) => ({ kind: 'rest', admin: true, method, path: p, body: b }))
        : path.map((p) => ({ kind: 'rest', admin: true, method, path: p }));
    /** A path whose every `{id}` is drawn on its own; `?` adds a query. */
    const adminPath = (template: string): fc.Arbitrary<string> => {
      const [path, withQuery] = template.endsWith('?') ? [template.slice(0, -1), true] : [template, false];
      const count = path.split('{id}').length - 1;
      return fc.tuple(fc.array(adminId, { minLength: count, maxLength: count }), query).map(([ids, q]) => {
        let next = 0;
        const filled = path.replace(/\{id\}/g, () => ids[next++]!);
        return withQuery ? `${filled}?${queryString(q)}` : filled;
      });
    };
    const ADMIN_ROUTES: [method: string, path: string, withBody: boolean][] = [
      ['GET', '/partners?', false],
      ['POST', '/partners', true],
      ['GET', '/partners/{id}/enterprises?', false],
      ['POST', '/partners/{id}/enterprises', true],
      ['GET', '/enterprises/{id}/orgs?', false],
      ['POST', '/enterprises/{id}/orgs', true],
      ['GET', '/orgs/{id}', false],
      ['POST', '/orgs/{id}/categories', true],
      ['PATCH', '/orgs/{id}/categories/{id}', true],
      ['POST', '/orgs/{id}/users', true],
      ['PATCH', '/orgs/{id}/users/{id}', true],
      ['POST', '/api-keys', true],
      ['GET', '/api-keys?', false],
      ['GET', '/api-keys/{id}', false],
      ['POST', '/api-keys/{id}/rotate', true],
      ['POST', '/api-keys/{id}/revoke', false],
      ['POST', '/admin-keys', true],
      ['GET', '/admin-keys?', false],
      ['POST', '/admin-keys/{id}/revoke', false],
      ['POST', '/webhooks', true],
      ['GET', '/webhooks?', false],
      ['GET', '/webhooks/{id}', false],
      ['PATCH', '/webhooks/{id}', true],
      ['DELETE', '/webhooks/{id}', false],
      ['POST', '/webhooks/{id}/rotate-secret', false],
      ['POST', '/webhooks/{id}/test', false],
      ['POST', '/webhooks/{id}/replay', true],
      ['GET', '/webhooks/{id}/deliveries?', false],
      ['POST', '/orgs/{id}/devices', true],
      ['GET', '/orgs/{id}/devices?', false],
      ['POST', '/devices/{id}/revoke', false],
      ['POST', '/devices/{id}/rotate-token', false],
    ];
    const adminRoutes = ADMIN_ROUTES.map(([method, template, withBody]) => admin(method, adminPath(template), withBody));
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
    const toolValue = fc.oneof(
      { weight: 4, arbitrary: fc.oneof(anyValue, plausible) },
      { weight: 1, arbitrary: craftedCursor },
      { weight: 1, arbitrary: fc.constantFrom(2 ** 31, 2 ** 63, -(2 ** 31) - 1, 1.5, 1e308) },
    );
    const toolArguments = fc.tuple(orgId, emergencyId, fc.dictionary(fc.constantFrom(...FIELDS, ...QUERY_KEYS), toolValue, { maxKeys: 4 }));
    const toolCall = fc.tuple(fc.constantFrom(...TOOLS), toolArguments).map(
      ([name, [oid, eid, rest]]): Request => ({
        kind: 'mcp',
        message: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { orgId: oid, emergencyId: eid, ...rest } } },
      }),
    );
    const rawRpc = fc.oneof(anyValue, fc.array(anyValue, { maxLength: 3 })).map((message): Request => ({ kind: 'mcp', message }));
    const request = fc.oneof(
      ...routes.map((arbitrary) => ({ weight: 2, arbitrary })),
      ...adminRoutes.map((arbitrary) => ({ weight: 1, arbitrary })),
      { weight: 6, arbitrary: toolCall },
      { weight: 1, arbitrary: rawRpc },
    );

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

  it('crafted cursors are 422 cursor_invalid, and offsets or limits past 2^31 are 422 at the field, on every list and list tool', async () => {
    const e = emergencyIds[0]!;
    // Its own subscription: the random requests may have deleted the first one.
    const webhook = await client(`${server.url}/api/admin/v1`, adminKey).post('/webhooks', {
      url: 'http://127.0.0.1:9/fuzz',
      subject: { type: 'org', id: org.orgId },
    });
    const webhookId = webhook.body.webhookId as string;
    const publicLists = [
      '/orgs',
      `/orgs/${org.orgId}/emergencies`,
      `/orgs/${org.orgId}/emergencies/categories`,
      `/orgs/${org.orgId}/users`,
      `/orgs/${org.orgId}/audit-logs`,
      `/orgs/${org.orgId}/events`,
      `/orgs/${org.orgId}/emergencies/${e}/events`,
      `/orgs/${org.orgId}/devices`,
      `/orgs/${org.orgId}/emergencies/${e}/messages`,
      `/orgs/${org.orgId}/emergencies/${e}/receipts`,
    ].map((path) => `${server.base}${path}`);
    const adminLists = [
      '/partners',
      `/partners/${org.partnerId}/enterprises`,
      `/enterprises/${org.enterpriseId}/orgs`,
      '/api-keys',
      '/admin-keys',
      '/webhooks',
      `/webhooks/${webhookId}/deliveries`,
      `/orgs/${org.orgId}/devices`,
    ].map((path) => `${server.url}/api/admin/v1${path}`);
    const uuid = '01900000-0000-7000-8000-000000000000';
    // Each decodes to something no list's cursor holds: a NUL, a fraction, an integer past int4 or
    // int8, nesting, an object, the wrong number of parts; or is not base64url JSON at all, or is huge.
    const arrays: unknown[] = [
      ['x\u0000', 'y'],
      ['x\u0000'],
      ['a', 'b', 'c\u0000'],
      ['2026-01-01T00:00:00.000Z', 'x\u0000'],
      ['2026-01-01T00:00:00.000Z', `${uuid}\u0000`],
      [5, 'Fire\u0000', uuid],
      [1.5],
      [1.5, 'a'],
      [1.5, 'Fire', uuid],
      [2 ** 31],
      [2 ** 31, 'Fire', uuid],
      [-(2 ** 31) - 1],
      [2 ** 63],
      [-(2 ** 63), uuid],
      [1e308],
      [['a']],
      [['a'], uuid],
      [[1], [2], [3]],
      [{ a: 1 }],
      [{}, uuid],
      [null, null],
      [true],
      [],
      [1, 2, 3, 4],
      ['2026-01-01T00:00:00.000Z', 'not-an-id'],
    ];
    const cursors = new Set<string>(arrays.map((value) => base64Of(value, 'base64url')));
    // Standard base64 (with `=` padding, `+` and `/`) is not the cursor alphabet.
    for (const value of [['x\u0000'], [1.5], ['??>', '~~~']]) cursors.add(base64Of(value, 'base64'));
    for (const text of ['not json', '"text"', '{"a":1}', 'null', '7', '[1,']) cursors.add(base64Of(text, 'base64url'));
    cursors.add('!!!');
    cursors.add('A'.repeat(5000));
    cursors.add(
      base64Of(
        Array.from({ length: 2000 }, () => 1),
        'base64url',
      ),
    );
    cursors.add(base64Of(JSON.parse(`${'['.repeat(500)}1${']'.repeat(500)}`), 'base64url'));

    const failures: string[] = [];
    const expectIssue = async (url: string, bearer: string, field: string, type?: string) => {
      const res = await fetch(url, { headers: { authorization: `Bearer ${bearer}` } });
      const body = (await res.json()) as { detail?: { loc?: unknown; type?: string }[] };
      const issue = Array.isArray(body.detail) ? body.detail[0] : undefined;
      const ok = res.status === 422 && JSON.stringify(issue?.loc) === JSON.stringify(['query', field]) && (type === undefined || issue?.type === type);
      if (!ok) failures.push(`${res.status} ${JSON.stringify(body).slice(0, 160)} for ${url.slice(0, 200)}`);
    };
    // One list at a time, its cursors at once.
    for (const [lists, bearer] of [
      [publicLists, key],
      [adminLists, adminKey],
    ] as const) {
      for (const list of lists) {
        await Promise.all([
          ...[...cursors].map((cursor) => expectIssue(`${list}?cursor=${encodeURIComponent(cursor)}`, bearer, 'cursor', 'cursor_invalid')),
          expectIssue(`${list}?limit=2147483648`, bearer, 'limit'),
          expectIssue(`${list}?limit=9223372036854775808`, bearer, 'limit'),
        ]);
      }
    }
    for (const after of ['2147483648', '9223372036854775808', '1e21'])
      await expectIssue(`${server.base}/orgs/${org.orgId}/events?after=${after}`, key, 'after');
    // An event's page of devices in the receipts has a cursor of its own.
    const receipts = `${server.base}/orgs/${org.orgId}/emergencies/${e}/receipts`;
    await Promise.all(
      [...cursors].map((cursor) => expectIssue(`${receipts}?deviceCursor=${encodeURIComponent(cursor)}`, key, 'deviceCursor', 'cursor_invalid')),
    );

    for (const tool of ['list_emergencies', 'list_audit_logs', 'list_events']) {
      await Promise.all(
        [...cursors].map(async (cursor) => {
          const payload = await toolError(tool, { orgId: org.orgId, cursor });
          if (payload?.status !== 422 || payload.error !== 'cursor_invalid')
            failures.push(`${tool} ${JSON.stringify(payload).slice(0, 200)} for cursor ${cursor.slice(0, 60)}`);
        }),
      );
      const limit = await toolError(tool, { orgId: org.orgId, limit: 2 ** 31 });
      if (limit?.status !== 422 || limit.error !== 'validation_error') failures.push(`${tool} ${JSON.stringify(limit).slice(0, 200)} for limit 2^31`);
    }
    for (const after of [2 ** 31, 2 ** 63]) {
      const payload = await toolError('list_events', { orgId: org.orgId, after });
      if (payload?.status !== 422) failures.push(`list_events ${JSON.stringify(payload).slice(0, 200)} for after ${after}`);
    }
    assert.deepEqual(failures, []);
  });

  /** The error payload of a tool call (undefined when the call succeeded). */
  async function toolError(name: string, args: Record<string, unknown>): Promise<{ status?: number; error?: string } | undefined> {
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-03-26',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
    });
    const answer = (await res.json()) as { result?: { isError?: boolean; content?: { text?: string }[] } };
    return answer.result?.isError ? (JSON.parse(answer.result.content?.[0]?.text ?? '{}') as { status?: number; error?: string }) : undefined;
  }

  /** The HTTP status, or for a tool result the status its error payload names. */
  async function send(req: Request): Promise<number> {
    const headers: Record<string, string> = { authorization: `Bearer ${req.kind === 'rest' && req.admin ? adminKey : key}` };
    if (req.kind === 'rest') {
      const init: RequestInit = { method: req.method, headers };
      if (req.body !== undefined || req.raw !== undefined) {
        init.body = req.raw ?? JSON.stringify(req.body);
        headers['content-type'] = 'application/json';
      }
      const res = await fetch(`${req.admin ? `${server.url}/api/admin/v1` : server.base}${req.path}`, init);
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
