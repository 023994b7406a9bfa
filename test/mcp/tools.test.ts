import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { declareEmergency } from '../../src/domain/emergencies/service.js';
import { client } from '../helpers/http.js';
import { connectMcp, type McpConnection } from '../helpers/mcp.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

const MISSING_ORG = '00000000-0000-4000-8000-000000000000';

describe('tool server tools', () => {
  let server: TestServer;
  let org: OrgFixture;
  let sibling: OrgFixture;
  let other: OrgFixture;
  let keyId: string;
  let key: string;
  let mcp: McpConnection;

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    sibling = await createOrgTree(server.ctx, { partnerId: org.partnerId, enterpriseId: org.enterpriseId });
    other = await createOrgTree(server.ctx);
    ({ id: keyId, key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, name: 'agent key' }));
    mcp = await connectMcp(server.url, key);
  });
  after(async () => {
    await mcp.close();
    await server.close();
  });

  const eventsOf = (emergencyId: string) =>
    server.ctx.db.db
      .selectFrom('events')
      .select(['sequence', 'event_type'])
      .where('emergency_id', '=', emergencyId)
      .orderBy('sequence')
      .execute()
      .then((rows) => rows.map((r) => `${r.sequence}:${r.event_type}`));

  it('list_categories lists the organization categories, highest severity first', async () => {
    const page = await mcp.ok('list_categories', { orgId: org.orgId });
    assert.deepEqual(
      page.items.map((c: { name: string }) => c.name),
      ['Fire', 'Medical', 'Uncategorized'],
    );
    assert.equal(page.nextCursor, null);
    const fire = page.items[0];
    assert.equal(fire.categoryId, org.categories.Fire);
    assert.equal(fire.color, '#D32F2F');
    assert.equal(fire.responseLevel, 'evacuate');
    assert.equal(fire.isSystem, false);
  });

  it('create_emergency declares under Uncategorized by default, emits emergency.declared and audits the key', async () => {
    const created = await mcp.ok('create_emergency', { orgId: org.orgId, description: 'Alarm without a category' });
    assert.equal(created.status, 'declared');
    assert.equal(created.orgId, org.orgId);
    assert.equal(created.category.name, 'Uncategorized');
    assert.deepEqual(created.declaredBy, { type: 'api_key', id: keyId, name: 'agent key' });
    assert.deepEqual(await eventsOf(created.emergencyId), ['1:emergency.declared']);
    const audit = await mcp.ok('list_audit_logs', { orgId: org.orgId, eventCategory: 'emergency', eventType: 'emergency.declared' });
    const entry = audit.items.find((e: { resource: { id: string } }) => e.resource.id === created.emergencyId);
    assert.ok(entry, 'audit entry written');
    assert.deepEqual(entry.actor, { type: 'api_key', id: keyId, name: 'agent key' });
    assert.deepEqual(entry.resource, { type: 'emergency', id: created.emergencyId });
    assert.ok(entry.requestId);
    // The same record is what REST returns.
    const rest = await client(server.base, key).get(`/orgs/${org.orgId}/emergencies/${created.emergencyId}`);
    assert.deepEqual(rest.body, created);
  });

  it('create_emergency takes every declare field', async () => {
    const created = await mcp.ok('create_emergency', {
      orgId: org.orgId,
      categoryName: 'fire',
      externalId: 'cad-1001',
      source: 'fire-panel',
      description: 'Smoke on floor 2',
      occurredAt: '2026-11-21T18:00:00+01:00',
      location: { latitude: 48.85, longitude: 2.35, floorId: 'F2' },
      metadata: { zone: 'B' },
      declaredBy: { id: 'u-7', name: 'Jo Doe' },
    });
    assert.equal(created.category.id, org.categories.Fire);
    assert.equal(created.externalId, 'cad-1001');
    assert.equal(created.occurredAt, '2026-11-21T17:00:00.000Z');
    assert.deepEqual(created.location, { latitude: 48.85, longitude: 2.35, floorId: 'F2' });
    assert.deepEqual(created.metadata, { zone: 'B' });
    assert.deepEqual(created.declaredBy, { type: 'user', id: 'u-7', name: 'Jo Doe' });
    const byId = await mcp.ok('create_emergency', { orgId: org.orgId, categoryId: org.categories.Medical });
    assert.equal(byId.category.name, 'Medical');
  });

  it('create_emergency refuses a repeated externalId with 409 and the existing emergencyId, creating nothing', async () => {
    const first = await mcp.ok('create_emergency', { orgId: org.orgId, externalId: 'dup-1' });
    const conflict = await mcp.fail('create_emergency', { orgId: org.orgId, externalId: 'dup-1', description: 'retry' });
    assert.equal(conflict.status, 409);
    assert.equal(conflict.error, 'external_id_conflict');
    assert.equal(conflict.emergencyId, first.emergencyId);
    assert.match(conflict.message, /get_emergency/);
    const page = await mcp.ok('list_emergencies', { orgId: org.orgId, externalId: 'dup-1' });
    assert.deepEqual(
      page.items.map((e: { emergencyId: string }) => e.emergencyId),
      [first.emergencyId],
    );
  });

  it('invalid arguments come back as 422 tool errors naming each argument', async () => {
    const unknownCategory = await mcp.fail('create_emergency', { orgId: org.orgId, categoryName: 'Volcano' });
    assert.equal(unknownCategory.status, 422);
    assert.equal(unknownCategory.error, 'validation_error');
    assert.deepEqual(
      unknownCategory.issues.map((i: { loc: unknown; type: string }) => [i.loc, i.type]),
      [[['categoryName'], 'category_not_found']],
    );
    assert.match(unknownCategory.message, /list the categories/);

    const several = await mcp.fail('create_emergency', {
      orgId: 'not-a-uuid',
      categoryId: org.categories.Fire,
      categoryName: 'Fire',
      occurredAt: 'yesterday',
      location: { latitude: 91, longitude: 0 },
      severity: 5,
    });
    assert.equal(several.status, 422);
    const byLoc = new Map<string, string[]>();
    for (const i of several.issues as { loc: string[]; type: string }[]) byLoc.set(i.loc.join('.'), [...(byLoc.get(i.loc.join('.')) ?? []), i.type]);
    assert.deepEqual([...byLoc.keys()].sort(), ['categoryName', 'location.latitude', 'occurredAt', 'orgId', 'severity']);
    assert.deepEqual(byLoc.get('orgId'), ['uuid_format']);
    assert.ok(byLoc.get('occurredAt')?.includes('string_pattern_mismatch'));
    assert.deepEqual(byLoc.get('location.latitude'), ['less_than_equal']);
    assert.deepEqual(byLoc.get('severity'), ['extra_forbidden']);
    assert.match(several.message, /call create_emergency again/);

    const missing = await mcp.fail('get_emergency', { orgId: org.orgId });
    assert.deepEqual(missing.issues, [{ loc: ['emergencyId'], msg: 'Field required', type: 'missing' }]);
  });

  it('get_emergency returns one emergency; an unknown id or one of another organization is 404', async () => {
    const created = await mcp.ok('create_emergency', { orgId: org.orgId, description: 'get me' });
    assert.deepEqual(await mcp.ok('get_emergency', { orgId: org.orgId, emergencyId: created.emergencyId }), created);
    for (const emergencyId of ['not-an-id', '0190b4c2-0000-4000-8000-000000000000']) {
      const missing = await mcp.fail('get_emergency', { orgId: org.orgId, emergencyId });
      assert.equal(missing.status, 404);
      assert.equal(missing.error, 'emergency_not_found');
    }
    const elsewhere = await declareEmergency(server.ctx, operatorCaller(), sibling.orgId, { description: 'sibling' });
    const hidden = await mcp.fail('get_emergency', { orgId: org.orgId, emergencyId: elsewhere.emergencyId });
    assert.equal(hidden.status, 404);
  });

  it('list_emergencies filters by status, category, externalId and occurredAt, pages with nextCursor, and defaults to 50', async () => {
    const base = await createOrgTree(server.ctx, { partnerId: org.partnerId, enterpriseId: org.enterpriseId });
    const enterpriseKey = (await mintKey(server.ctx, { subjectType: 'enterprise', subjectId: org.enterpriseId })).key;
    const agent = await connectMcp(server.url, enterpriseKey);
    try {
      const times = ['2026-01-01T10:00:00Z', '2026-01-02T10:00:00Z', '2026-01-03T10:00:00Z'];
      const made = [];
      for (const [i, occurredAt] of times.entries()) {
        made.push(await agent.ok('create_emergency', { orgId: base.orgId, occurredAt, externalId: `x-${i}`, categoryName: i === 2 ? 'Fire' : undefined }));
      }
      await agent.ok('update_emergency', { orgId: base.orgId, emergencyId: made[1].emergencyId, categoryName: 'Medical' });
      const ids = (page: { items: { emergencyId: string }[] }) => page.items.map((e) => e.emergencyId);

      assert.deepEqual(
        ids(await agent.ok('list_emergencies', { orgId: base.orgId })),
        [made[2], made[1], made[0]].map((e) => e.emergencyId),
      );
      assert.deepEqual(ids(await agent.ok('list_emergencies', { orgId: base.orgId, status: 'categorized' })), [made[1].emergencyId]);
      assert.deepEqual(ids(await agent.ok('list_emergencies', { orgId: base.orgId, categoryId: base.categories.Fire })), [made[2].emergencyId]);
      assert.deepEqual(ids(await agent.ok('list_emergencies', { orgId: base.orgId, externalId: 'x-0' })), [made[0].emergencyId]);
      assert.deepEqual(ids(await agent.ok('list_emergencies', { orgId: base.orgId, since: '2026-01-02T10:00:00Z', until: '2026-01-03T10:00:00Z' })), [
        made[1].emergencyId,
      ]);

      const first = await agent.ok('list_emergencies', { orgId: base.orgId, limit: 2 });
      assert.equal(first.items.length, 2);
      assert.equal(typeof first.nextCursor, 'string');
      const second = await agent.ok('list_emergencies', { orgId: base.orgId, limit: 2, cursor: first.nextCursor });
      assert.deepEqual(ids(second), [made[0].emergencyId]);
      assert.equal(second.nextCursor, null);

      const badStatus = await agent.fail('list_emergencies', { orgId: base.orgId, status: 'open' });
      assert.deepEqual(
        badStatus.issues.map((i: { loc: string[] }) => i.loc),
        [['status']],
      );
      const badCursor = await agent.fail('list_emergencies', { orgId: base.orgId, cursor: 'garbage!' });
      assert.equal(badCursor.status, 422);
      assert.deepEqual(badCursor.issues[0].loc, ['cursor']);
      const badSince = await agent.fail('list_emergencies', { orgId: base.orgId, since: '2026-01-01' });
      assert.deepEqual(badSince.issues[0].loc, ['since']);
      const badLimit = await agent.fail('list_emergencies', { orgId: base.orgId, limit: 0 });
      assert.deepEqual(badLimit.issues[0].loc, ['limit']);

      for (let i = 0; i < 50; i++) await declareEmergency(server.ctx, operatorCaller(), base.orgId, { occurredAt: '2025-01-01T00:00:00Z' });
      const defaultPage = await agent.ok('list_emergencies', { orgId: base.orgId });
      assert.equal(defaultPage.items.length, 50);
      assert.equal(typeof defaultPage.nextCursor, 'string');
    } finally {
      await agent.close();
    }
  });

  it('update_emergency re-categorizes and emits emergency.categorized; naming no category is 422', async () => {
    const created = await mcp.ok('create_emergency', { orgId: org.orgId });
    const updated = await mcp.ok('update_emergency', { orgId: org.orgId, emergencyId: created.emergencyId, categoryId: org.categories.Fire });
    assert.equal(updated.status, 'categorized');
    assert.equal(updated.category.name, 'Fire');
    assert.deepEqual(await eventsOf(created.emergencyId), ['1:emergency.declared', '2:emergency.categorized']);
    const same = await mcp.ok('update_emergency', { orgId: org.orgId, emergencyId: created.emergencyId, categoryName: 'Fire' });
    assert.deepEqual(same, updated);
    assert.equal((await eventsOf(created.emergencyId)).length, 2, 'no-op emits nothing');
    const neither = await mcp.fail('update_emergency', { orgId: org.orgId, emergencyId: created.emergencyId });
    assert.equal(neither.status, 422);
    assert.deepEqual(neither.issues[0].loc, ['categoryId']);
    const unknown = await mcp.fail('update_emergency', { orgId: org.orgId, emergencyId: created.emergencyId, categoryName: 'Nope' });
    assert.equal(unknown.issues[0].type, 'category_not_found');
  });

  it('resolve_emergency resolves once and emits emergency.resolved; a second call is a 409 error that changes nothing', async () => {
    const created = await mcp.ok('create_emergency', { orgId: org.orgId, categoryName: 'Medical' });
    const resolved = await mcp.ok('resolve_emergency', {
      orgId: org.orgId,
      emergencyId: created.emergencyId,
      resolutionNote: 'Patient transported',
      resolvedAt: '2026-11-21T19:00:00Z',
      resolvedBy: { id: 'u-9', name: 'Sam Medic' },
      metadata: { ticket: 42 },
    });
    assert.equal(resolved.status, 'resolved');
    assert.equal(resolved.resolvedAt, '2026-11-21T19:00:00.000Z');
    assert.deepEqual(resolved.resolvedBy, { type: 'user', id: 'u-9', name: 'Sam Medic' });
    assert.equal(resolved.resolutionNote, 'Patient transported');
    assert.deepEqual(await eventsOf(created.emergencyId), ['1:emergency.declared', '2:emergency.resolved']);

    const again = await mcp.fail('resolve_emergency', { orgId: org.orgId, emergencyId: created.emergencyId, resolutionNote: 'again' });
    assert.equal(again.status, 409);
    assert.equal(again.error, 'emergency_resolved');
    assert.equal(again.emergencyId, created.emergencyId);
    assert.equal((await eventsOf(created.emergencyId)).length, 2);
    assert.deepEqual(await mcp.ok('get_emergency', { orgId: org.orgId, emergencyId: created.emergencyId }), resolved);

    const immutable = await mcp.fail('update_emergency', { orgId: org.orgId, emergencyId: created.emergencyId, categoryName: 'Fire' });
    assert.equal(immutable.status, 409);
    assert.equal(immutable.error, 'emergency_resolved');
    const byKey = await mcp.ok('resolve_emergency', { orgId: org.orgId, emergencyId: (await mcp.ok('create_emergency', { orgId: org.orgId })).emergencyId });
    assert.deepEqual(byKey.resolvedBy, { type: 'api_key', id: keyId, name: 'agent key' });
    const missing = await mcp.fail('resolve_emergency', { orgId: org.orgId, emergencyId: MISSING_ORG });
    assert.equal(missing.status, 404);
  });

  it('list_audit_logs filters and pages; eventType without eventCategory is an error', async () => {
    const created = await mcp.ok('create_emergency', { orgId: org.orgId });
    await mcp.ok('update_emergency', { orgId: org.orgId, emergencyId: created.emergencyId, categoryName: 'Fire' });
    await mcp.ok('resolve_emergency', { orgId: org.orgId, emergencyId: created.emergencyId });
    const all = await mcp.ok('list_audit_logs', { orgId: org.orgId, actorId: keyId });
    assert.ok(all.items.length >= 3);
    for (const entry of all.items) assert.equal(entry.actor.id, keyId);
    const newest = all.items.slice(0, 3).map((e: { eventType: string }) => e.eventType);
    assert.deepEqual(newest, ['emergency.resolved', 'emergency.categorized', 'emergency.declared']);

    const categorized = await mcp.ok('list_audit_logs', { orgId: org.orgId, eventCategory: 'emergency', eventType: 'emergency.categorized' });
    assert.ok(categorized.items.every((e: { eventType: string }) => e.eventType === 'emergency.categorized'));

    const page1 = await mcp.ok('list_audit_logs', { orgId: org.orgId, limit: 2 });
    const page2 = await mcp.ok('list_audit_logs', { orgId: org.orgId, limit: 2, cursor: page1.nextCursor });
    assert.equal(page2.items.length, 2);
    assert.notDeepEqual(page2.items[0], page1.items[0]);
    assert.equal((await mcp.ok('list_audit_logs', { orgId: org.orgId, until: '2000-01-01T00:00:00Z' })).items.length, 0);
    assert.ok((await mcp.ok('list_audit_logs', { orgId: org.orgId, since: '2000-01-01T00:00:00Z' })).items.length > 0);

    const orphan = await mcp.fail('list_audit_logs', { orgId: org.orgId, eventType: 'emergency.declared' });
    assert.equal(orphan.status, 422);
    assert.deepEqual(
      orphan.issues.map((i: { loc: string[] }) => i.loc),
      [['eventType']],
    );
    assert.match(orphan.message, /eventType requires eventCategory/);
    const badUntil = await mcp.fail('list_audit_logs', { orgId: org.orgId, until: 'tomorrow' });
    assert.deepEqual(badUntil.issues[0].loc, ['until']);
  });

  it('an organization the key does not cover is 403 org_not_covered on every tool, and nothing is written there', async () => {
    const target = await declareEmergency(server.ctx, operatorCaller(), other.orgId, { description: 'not yours' });
    const calls: [string, Record<string, unknown>][] = [
      ['list_categories', {}],
      ['list_emergencies', {}],
      ['get_emergency', { emergencyId: target.emergencyId }],
      ['list_audit_logs', {}],
      ['create_emergency', { description: 'cross-org' }],
      ['update_emergency', { emergencyId: target.emergencyId, categoryName: 'Fire' }],
      ['resolve_emergency', { emergencyId: target.emergencyId }],
    ];
    for (const orgId of [other.orgId, sibling.orgId, MISSING_ORG]) {
      for (const [name, args] of calls) {
        const denied = await mcp.fail(name, { orgId, ...args });
        assert.equal(denied.status, 403, `${name} on ${orgId}`);
        assert.equal(denied.error, 'org_not_covered');
        assert.match(denied.message, /orgId this API key covers/);
      }
    }
    const after = await server.ctx.db.db.selectFrom('emergencies').select(['status']).where('id', '=', target.emergencyId).executeTakeFirstOrThrow();
    assert.equal(after.status, 'declared');
    assert.deepEqual(await eventsOf(target.emergencyId), ['1:emergency.declared']);
  });

  it('a key whose allowedOrgIds exclude the organization is refused even inside its enterprise', async () => {
    const limited = await mintKey(server.ctx, { subjectType: 'enterprise', subjectId: org.enterpriseId, allowedOrgIds: [org.orgId] });
    const agent = await connectMcp(server.url, limited.key);
    try {
      await agent.ok('list_categories', { orgId: org.orgId });
      const denied = await agent.fail('create_emergency', { orgId: sibling.orgId });
      assert.equal(denied.status, 403);
      assert.equal(denied.error, 'org_not_covered');
    } finally {
      await agent.close();
    }
  });
});
