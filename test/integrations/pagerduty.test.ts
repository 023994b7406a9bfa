import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { runCli } from '../helpers/cli.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** The trigger of PagerDuty's documentation (Events API v2, "Send an Alert Event"), with every field, on our routing key. */
const documentedTrigger = (routingKey: string, dedupKey: string) => ({
  payload: {
    summary: 'Example alert on host1.example.com',
    timestamp: '2015-07-17T08:42:58.315+0000',
    source: 'monitoringtool:cloudvendor:central-region-dc-01:852559987:cluster/api-stats-prod-003',
    severity: 'info',
    component: 'postgres',
    group: 'prod-datapipe',
    class: 'deploy',
    custom_details: { 'ping time': '1500ms', 'load avg': 0.75 },
  },
  routing_key: routingKey,
  dedup_key: dedupKey,
  images: [{ src: 'https://www.pagerduty.com/wp-content/uploads/2016/05/pagerduty-logo-green.png', href: 'https://example.com/', alt: 'Example text' }],
  links: [{ href: 'https://example.com/', text: 'Link text' }],
  event_action: 'trigger',
  client: 'Sample Monitoring Service',
  client_url: 'https://monitoring.example.com',
});

/** PagerDuty Events API v2 (extensions §12): integration keys minted with the admin API and CLI, PagerDuty's answers. */
describe('PagerDuty Events v2 ingest', () => {
  let server: TestServer;
  let org: OrgFixture;
  let admin: ReturnType<typeof client>;
  let api: ReturnType<typeof client>;
  let adminKey: string;
  let routingKey: string;
  let routingKeyId: string;
  const enqueue = (body: unknown, headers?: Record<string, string>) => client(server.base).post('/integrations/pagerduty/v2/enqueue', body, headers);
  const byExternalId = async (externalId: string) =>
    (await api.get(`/orgs/${org.orgId}/emergencies?limit=200`)).body.items.filter(
      (e: any) => e.externalId === externalId || e.externalId.startsWith(`${externalId}@`),
    );

  before(async () => {
    server = await startTestServer({ AUTH_FAILURES_PER_ADDRESS: '2' });
    org = await createOrgTree(server.ctx);
    adminKey = (await createAdminKey(server.ctx, operatorCaller(), { name: 'root', subject: { type: 'instance' } })).key;
    admin = client(`${server.url}/api/admin/v1`, adminKey);
    api = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    const minted = await admin.post(`/orgs/${org.orgId}/integration-keys`, { name: 'Datadog production' });
    assert.equal(minted.status, 201);
    assert.match(minted.body.key, /^enk_int_[0-9a-f]{32}$/);
    routingKey = minted.body.key;
    routingKeyId = minted.body.id;
  });
  after(() => server?.close());

  it("PagerDuty's documented trigger declares, a second trigger posts to it, acknowledge is a message, resolve resolves", async () => {
    const trigger = await enqueue(documentedTrigger(routingKey, 'samplekeyhere'));
    assert.equal(trigger.status, 202);
    assert.deepEqual(trigger.body, { status: 'success', message: 'Event processed', dedup_key: 'samplekeyhere' });
    const [declared] = await byExternalId('pd:samplekeyhere');
    assert.equal(declared.description, 'Example alert on host1.example.com');
    assert.equal(declared.source, 'monitoringtool:cloudvendor:central-region-dc-01:852559987:cluster/api-stats-prod-003');
    assert.equal(declared.occurredAt, '2015-07-17T08:42:58.315Z');
    assert.equal(declared.category.name, 'Uncategorized');
    assert.deepEqual(declared.metadata.pagerduty.custom_details, { 'ping time': '1500ms', 'load avg': 0.75 });
    assert.equal(declared.metadata.pagerduty.component, 'postgres');
    assert.equal(declared.metadata.pagerduty.links[0].href, 'https://example.com/');
    assert.equal(declared.declaredBy.name, 'Sample Monitoring Service');

    const again = await enqueue(documentedTrigger(routingKey, 'samplekeyhere'));
    assert.equal(again.status, 202);
    assert.equal((await byExternalId('pd:samplekeyhere')).length, 1);
    const ack = await enqueue({ routing_key: routingKey, dedup_key: 'samplekeyhere', event_action: 'acknowledge' });
    assert.deepEqual(ack.body, { status: 'success', message: 'Event processed', dedup_key: 'samplekeyhere' });
    const messages = (await api.get(`/orgs/${org.orgId}/emergencies/${declared.emergencyId}/messages`)).body.items.map((m: any) => m.content);
    assert.ok(messages.some((m: string) => m.startsWith('Triggered again (info): Example alert')));
    assert.ok(messages.includes('Acknowledged in Datadog production.'));

    const resolve = await enqueue({ routing_key: routingKey, dedup_key: 'samplekeyhere', event_action: 'resolve' });
    assert.equal(resolve.status, 202);
    const [resolved] = await byExternalId('pd:samplekeyhere');
    assert.equal(resolved.status, 'resolved');
    // Once resolved, acknowledge and resolve are dropped and a trigger opens a new incident, as in PagerDuty.
    assert.equal((await enqueue({ routing_key: routingKey, dedup_key: 'samplekeyhere', event_action: 'resolve' })).status, 202);
    assert.equal((await enqueue(documentedTrigger(routingKey, 'samplekeyhere'))).status, 202);
    const both = await byExternalId('pd:samplekeyhere');
    assert.equal(both.length, 2);
    assert.equal(both.filter((e: any) => e.status !== 'resolved').length, 1);

    // The audit log names the integration as the actor.
    const audit = await api.get(`/orgs/${org.orgId}/audit-logs?eventCategory=emergency&limit=200`);
    const actors = audit.body.items.filter((e: any) => e.resource.id === declared.emergencyId).map((e: any) => e.actor);
    assert.ok(actors.length >= 2);
    for (const actor of actors) assert.deepEqual(actor, { type: 'integration', id: `pagerduty:${routingKeyId}`, name: 'Datadog production' });
  });

  it('a trigger without dedup_key gets one, and the category follows the org mapping of payload.severity', async () => {
    const mapped = await admin.patch(`/orgs/${org.orgId}/integrations/pagerduty/category-mapping`, { categoryMap: { critical: 'Fire' } });
    assert.equal(mapped.status, 200);
    assert.deepEqual(mapped.body.categoryMap, [{ value: 'critical', categoryId: org.categories.Fire, categoryName: 'Fire' }]);
    const { dedup_key, ...event } = documentedTrigger(routingKey, 'x');
    const trigger = await enqueue({ ...event, payload: { ...event.payload, severity: 'critical', summary: 'Smoke in hall B' } });
    assert.equal(trigger.status, 202);
    assert.match(trigger.body.dedup_key, /^[0-9a-f]{32}$/);
    const [declared] = await byExternalId(`pd:${trigger.body.dedup_key}`);
    assert.equal(declared.category.name, 'Fire');
    // By name without an entry: a value named like a category lands in it.
    const named = await enqueue({ ...documentedTrigger(routingKey, 'by-class'), payload: { ...event.payload, class: 'Medical' } });
    assert.equal(named.status, 202);
    await admin.patch(`/orgs/${org.orgId}/integrations/pagerduty/category-mapping`, { categoryField: 'class' });
    await enqueue({ ...documentedTrigger(routingKey, 'by-class-2'), payload: { ...event.payload, class: 'medical' } });
    assert.equal((await byExternalId('pd:by-class-2'))[0].category.name, 'Medical');
    const refused = await admin.patch(`/orgs/${org.orgId}/integrations/pagerduty/category-mapping`, { categoryField: 'summary' });
    assert.equal(refused.status, 422);
    const unknown = await admin.patch(`/orgs/${org.orgId}/integrations/pagerduty/category-mapping`, { categoryMap: { warning: 'No such category' } });
    assert.equal(unknown.status, 422);
    assert.deepEqual(unknown.body.detail[0].loc, ['body', 'categoryMap', 'warning']);
  });

  it("bad events get PagerDuty's 400 invalid event, with the fields at fault", async () => {
    const cases: [unknown, string][] = [
      [{ routing_key: routingKey, event_action: 'trigger' }, "'payload' is missing or blank"],
      [{ routing_key: routingKey, event_action: 'resolve' }, "'dedup_key' is missing or blank"],
      [{ routing_key: routingKey, event_action: 'explode', dedup_key: 'x' }, "'event_action' is invalid"],
      [{ ...documentedTrigger(routingKey, 'k'), payload: { summary: 'x', source: 'y', severity: 'fatal' } }, "'payload.severity' is invalid"],
      [{ ...documentedTrigger(routingKey, 'k'), payload: { summary: '', source: 'y', severity: 'info' } }, "'payload.summary' is missing or blank"],
      [
        { ...documentedTrigger(routingKey, 'k'), payload: { summary: 'x', source: 'y', severity: 'info', timestamp: 'yesterday' } },
        "'payload.timestamp' is invalid",
      ],
      [{ event_action: 'trigger' }, "'routing_key'"],
      ['{"routing_key": ', 'not valid JSON'],
      [[1, 2], 'Event'],
    ];
    for (const [body, error] of cases) {
      const res = await enqueue(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.status, 'invalid event');
      assert.equal(res.body.message, 'Event object is invalid');
      assert.ok(
        res.body.errors.some((e: string) => e.includes(error)),
        `${JSON.stringify(res.body.errors)} names ${error}`,
      );
    }
    const tooLarge = await enqueue({
      ...documentedTrigger(routingKey, 'big'),
      payload: { summary: 'x', source: 'y', severity: 'info', custom_details: { blob: 'x'.repeat(600_000) } },
    });
    assert.equal(tooLarge.status, 400);
    assert.match(tooLarge.body.errors[0], /larger than 512 KB/);
  });

  it('unknown and revoked routing keys are refused as PagerDuty does, and a flood of them is throttled', async () => {
    const made = await enqueue({ ...documentedTrigger('enk_int_00000000000000000000000000000000', 'k') });
    assert.equal(made.status, 400);
    assert.deepEqual(made.body.errors, ['Invalid routing key']);
    let throttled = 0;
    for (let i = 0; i < 20; i++) {
      const res = await enqueue(documentedTrigger(`enk_int_${i.toString(16).padStart(8, '0')}${'0'.repeat(24)}`, 'k'));
      if (res.status === 429) {
        throttled++;
        assert.deepEqual(res.body, { status: 'throttle exceeded', message: 'Requests for this service are arriving too quickly. Please retry later.' });
        assert.ok(Number(res.headers.get('retry-after')) >= 1);
      } else assert.equal(res.status, 400);
    }
    assert.ok(throttled > 0);
    // The valid key still works from the same address.
    assert.equal((await enqueue(documentedTrigger(routingKey, 'still-works'))).status, 202);

    const second = await admin.post(`/orgs/${org.orgId}/integration-keys`, { name: 'to revoke' });
    const revoked = await admin.post(`/orgs/${org.orgId}/integration-keys/${second.body.id}/revoke`);
    assert.equal(revoked.body.status, 'revoked');
    let answer: any;
    for (let i = 0; i < 40; i++) {
      answer = await enqueue(documentedTrigger(second.body.key, 'after-revoke'));
      if (answer.status === 400) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(answer.status, 400);
    assert.deepEqual(answer.body.errors, ['Invalid routing key']);
    const listed = await admin.get(`/orgs/${org.orgId}/integration-keys`);
    assert.deepEqual(
      listed.body.items.map((k: any) => [k.name, k.status]),
      [
        ['Datadog production', 'active'],
        ['to revoke', 'revoked'],
      ],
    );
    assert.ok(listed.body.items.every((k: any) => !('key' in k)));
  });

  it('honours Idempotency-Key, and an API key or an admin key is no routing key', async () => {
    const event = documentedTrigger(routingKey, 'idem');
    const first = await enqueue(event, { 'idempotency-key': 'pd-1' });
    const replay = await enqueue(event, { 'idempotency-key': 'pd-1' });
    assert.equal(replay.status, 202);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, first.body);
    const reused = await enqueue({ ...event, dedup_key: 'other' }, { 'idempotency-key': 'pd-1' });
    assert.equal(reused.status, 422);
    assert.equal(reused.body.status, 'invalid event');
    for (const key of [adminKey, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key]) {
      const res = await enqueue(documentedTrigger(key, 'k'));
      assert.equal(res.status, 400);
      assert.deepEqual(res.body.errors, ['Invalid routing key']);
    }
  });

  it("fuzzed events get PagerDuty's answer shapes and never a 5xx", async () => {
    const text = fc.oneof(
      fc.string({ maxLength: 30 }),
      fc.string({ unit: 'binary', maxLength: 30 }),
      fc.constantFrom('', '\u0000', '\ud800', '💥', "' OR 1=1 --", 'x'.repeat(2000), '2015-07-17T08:42:58.315+0000', '0000-01-01T00:00:00Z'),
    );
    const value = fc.oneof(text, fc.jsonValue({ maxDepth: 3 }), fc.constant(undefined));
    const event = fc.record(
      {
        routing_key: fc.oneof(fc.constant(routingKey), fc.constant(routingKey), text),
        event_action: fc.oneof(fc.constantFrom('trigger', 'acknowledge', 'resolve'), text),
        dedup_key: fc.oneof(fc.constantFrom('fuzz-1', 'fuzz-2'), text),
        payload: fc.oneof(
          // A payload PagerDuty accepts, so that valid events are not left to chance.
          fc.record({ summary: fc.constantFrom('Smoke in hall B', 'Disk full'), source: fc.constant('fuzz'), severity: fc.constantFrom('critical', 'info') }),
          fc.record(
            { summary: value, source: value, severity: fc.oneof(fc.constantFrom('critical', 'info'), text), timestamp: value, custom_details: value },
            { requiredKeys: [] },
          ),
          value,
        ),
        links: value,
        images: value,
        client: value,
      },
      // The three keys every real event has, each either right or fuzzed: about one event in fifty is valid.
      { requiredKeys: ['routing_key', 'event_action', 'dedup_key'] },
    );
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(event, async (body) => {
        const res = await enqueue(body);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        assert.ok([202, 400, 429].includes(res.status), `${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        assert.equal(res.body.status, res.status === 202 ? 'success' : res.status === 400 ? 'invalid event' : 'throttle exceeded');
      }),
      { numRuns: 400 },
    );
    assert.ok((statuses.get(202) ?? 0) > 0 && (statuses.get(400) ?? 0) > 0, JSON.stringify([...statuses]));
  });

  it('the admin CLI mints, lists and revokes integration keys and sets the mapping, over the admin API', async () => {
    const env = { EMERGENCY_API_URL: server.url, EMERGENCY_API_ADMIN_KEY: adminKey };
    const created = await runCli(['admin', 'integration-key', 'create', '--org', org.orgId, '--name', 'Zabbix', '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.json.key, /^enk_int_[0-9a-f]{32}$/);
    assert.equal((await enqueue(documentedTrigger(created.json.key, 'from-zabbix'))).status, 202);
    const listed = await runCli(['admin', 'integration-key', 'list', '--org', org.orgId, '--json'], env);
    assert.ok(listed.json.items.some((k: any) => k.name === 'Zabbix' && k.status === 'active'));
    assert.ok(!listed.stdout.includes(created.json.key));
    const revoked = await runCli(['admin', 'integration-key', 'revoke', created.json.id, '--org', org.orgId, '--json'], env);
    assert.deepEqual(revoked.json, { id: created.json.id, status: 'revoked' });
    const set = await runCli(
      ['admin', 'integration-mapping', 'set', '--org', org.orgId, '--integration', 'alertmanager', '--field', 'team', '--map', 'fire-brigade=Fire', '--json'],
      env,
    );
    assert.equal(set.code, 0, set.stderr);
    assert.equal(set.json.categoryField, 'team');
    const shown = await runCli(['admin', 'integration-mapping', 'show', '--org', org.orgId, '--integration', 'alertmanager', '--json'], env);
    assert.deepEqual(shown.json.categoryMap, [{ value: 'fire-brigade', categoryId: org.categories.Fire, categoryName: 'Fire' }]);
    const bad = await runCli(['admin', 'integration-mapping', 'set', '--org', org.orgId, '--integration', 'nagios', '--field', 'x'], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--integration must be alertmanager or pagerduty/);

    // Alertmanager follows the mapping: the `team` label now picks the category.
    const am = await api.post(`/orgs/${org.orgId}/integrations/alertmanager`, {
      version: '4',
      status: 'firing',
      receiver: 'ops',
      alerts: [
        {
          status: 'firing',
          labels: { alertname: 'Smoke', team: 'Fire-Brigade', severity: 'Medical' },
          startsAt: '2026-12-07T18:00:00Z',
          fingerprint: 'abc123',
        },
      ],
    });
    assert.deepEqual(am.body, { declared: 1, resolved: 0, unchanged: 0 });
    const [declared] = await byExternalId('am:abc123');
    assert.equal(declared.category.name, 'Fire');
    const audit = await api.get(`/orgs/${org.orgId}/audit-logs?eventCategory=emergency&limit=200`);
    const entry = audit.body.items.find((e: any) => e.resource.id === declared.emergencyId);
    assert.equal(entry.actor.type, 'integration');
    assert.equal(entry.actor.id, 'alertmanager:ops');
    assert.ok(entry.actor.keyId);
  });
});
