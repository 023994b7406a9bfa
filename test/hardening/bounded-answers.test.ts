import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { declareEmergency, resolveEmergency } from '../../src/domain/emergencies/service.js';
import { createApiKey } from '../../src/domain/keys/service.js';
import { createSubscription } from '../../src/domain/webhooks/service.js';
import { newId } from '../../src/domain/shared/ids.js';
import { rawMcp } from '../helpers/mcp.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

const MiB = 1024 * 1024;

/**
 * extensions.md §9: no JSON answer exceeds 1 MiB. Every list below holds items as large as the input
 * limits allow (text of control characters, which JSON escapes to six bytes each), enough of them
 * that one page of the largest `limit` would pass 1 MiB: each page stays under it, and following
 * `nextCursor` still gives every item exactly once.
 */
describe('bounded answers: lists of large items', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  let adminKey: string;
  let emergencyIds: string[];
  let webhookId: string;

  const escaped = (n: number) => '\u0001'.repeat(n);
  // About 16 KiB serialized, the most `metadata` may hold.
  const metadata = { note: escaped(2600) };

  /** Every page of a list at its largest limit: the items, and the size of the largest answer in bytes. */
  async function walk(url: string, bearer: string, list = 'items'): Promise<{ items: any[]; pages: number; largest: number }> {
    const items: any[] = [];
    let largest = 0;
    let pages = 0;
    let cursor: string | null = null;
    do {
      const res: Response = await fetch(`${url}${cursor ? `&cursor=${cursor}` : ''}`, { headers: { authorization: `Bearer ${bearer}` } });
      const text = await res.text();
      assert.equal(res.status, 200, text.slice(0, 300));
      largest = Math.max(largest, Buffer.byteLength(text));
      const body: Record<string, any> = JSON.parse(text);
      items.push(...body[list]);
      cursor = body.nextCursor;
      pages++;
    } while (cursor);
    return { items, pages, largest };
  }

  const ids = (items: any[], field: string) => items.map((i) => i[field]);
  const distinct = (values: string[]) => new Set(values).size;

  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    adminKey = (await createAdminKey(server.ctx, operatorCaller(), { name: 'bounded', subject: { type: 'instance' } })).key;
    const operator = operatorCaller();
    emergencyIds = [];
    for (let i = 0; i < 70; i++) {
      const declared = await declareEmergency(server.ctx, operator, org.orgId, { categoryName: 'Fire', description: escaped(4000), metadata });
      await resolveEmergency(server.ctx, operator, org.orgId, declared.emergencyId, { resolutionNote: escaped(4000), metadata });
      emergencyIds.push(declared.emergencyId);
    }
    for (let i = 0; i < 30; i++) {
      const allowedOrgIds = Array.from({ length: 1000 }, () => randomUUID());
      const created = await createApiKey(server.ctx, operator, {
        name: `wide ${i}`,
        subjectType: 'org',
        subjectId: org.orgId,
        permissions: ['read'],
        allowedOrgIds: [org.orgId],
      });
      const sub = await createSubscription(server.ctx, operator, {
        subjectType: 'org',
        subjectId: org.orgId,
        url: `https://hooks.example.com/${'a'.repeat(2000)}`,
        allowedOrgIds: [org.orgId],
      });
      // The longest lists a database may hold: written before allowedOrgIds had to lie within the subject.
      const stored = JSON.stringify(allowedOrgIds);
      await server.ctx.db.db.updateTable('api_keys').set({ allowed_org_ids: stored }).where('id', '=', created.id).execute();
      await server.ctx.db.db.updateTable('webhook_subscriptions').set({ allowed_org_ids: stored }).where('id', '=', sub.id).execute();
      webhookId = sub.id;
    }
  });
  after(() => server.close());

  it('emergencies, the event feed and an emergency timeline', async () => {
    const base = `${server.base}/orgs/${org.orgId}`;
    const emergencies = await walk(`${base}/emergencies?limit=200`, key);
    assert.ok(emergencies.largest <= MiB, `${emergencies.largest} bytes`);
    assert.equal(emergencies.items.length, 70);
    assert.equal(distinct(ids(emergencies.items, 'emergencyId')), 70);
    assert.ok(emergencies.pages > 1);

    const feed = await walk(`${base}/events?limit=500`, key);
    assert.ok(feed.largest <= MiB, `${feed.largest} bytes`);
    assert.deepEqual(
      feed.items.map((i) => i.offset),
      Array.from({ length: 140 }, (_, i) => i + 1),
    );

    const timeline = await walk(`${base}/emergencies/${emergencyIds[0]}/events?limit=500`, key);
    assert.deepEqual(
      timeline.items.map((i) => i.event.eventType),
      ['emergency.declared', 'emergency.resolved'],
    );
  });

  it('the audit log', async () => {
    const audit = await walk(`${server.base}/orgs/${org.orgId}/audit-logs?limit=200`, key);
    assert.ok(audit.largest <= MiB, `${audit.largest} bytes`);
    assert.equal(audit.items.filter((e) => e.eventType === 'emergency.resolved').length, 70);
    assert.equal(distinct(ids(audit.items, 'auditLogId')), audit.items.length);
    assert.ok(audit.pages > 1);
  });

  it('messages with their attachments', async () => {
    // Resolved emergencies take no messages: an open one.
    const open = await declareEmergency(server.ctx, operatorCaller(), org.orgId, { categoryName: 'Fire' });
    const messages = `${server.base}/orgs/${org.orgId}/emergencies/${open.emergencyId}/messages`;
    for (let i = 0; i < 30; i++) {
      const res = await fetch(messages, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          content: escaped(4000),
          attachments: Array.from({ length: 5 }, (_, n) => ({ src: `https://cams.example.com/${n}/${'x'.repeat(4000)}`, caption: escaped(512) })),
        }),
      });
      assert.equal(res.status, 201, await res.text());
    }
    const listed = await walk(`${messages}?limit=200`, key);
    assert.ok(listed.largest <= MiB, `${listed.largest} bytes`);
    assert.equal(listed.items.length, 30);
    assert.equal(distinct(ids(listed.items, 'messageId')), 30);
    assert.ok(listed.items.every((m) => m.attachments.length === 5));
  });

  it('admin lists: API keys and webhooks with a thousand allowed orgs each', async () => {
    const admin = `${server.url}/api/admin/v1`;
    const keys = await walk(`${admin}/api-keys?limit=200`, adminKey);
    assert.ok(keys.largest <= MiB, `${keys.largest} bytes`);
    assert.equal(keys.items.filter((k) => k.allowedOrgIds?.length === 1000).length, 30);
    assert.equal(distinct(ids(keys.items, 'apiKeyId')), keys.items.length);
    const webhooks = await walk(`${admin}/webhooks?limit=200`, adminKey);
    assert.ok(webhooks.largest <= MiB, `${webhooks.largest} bytes`);
    assert.equal(webhooks.items.length, 30);
    assert.equal(distinct(ids(webhooks.items, 'webhookId')), 30);
  });

  it('a webhook delivery lists its latest 50 attempts, however often it was replayed', async () => {
    const db = server.ctx.db.db;
    const deliveryId = newId();
    const eventId = newId();
    const at = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
    await db
      .insertInto('webhook_deliveries')
      .values({
        id: deliveryId,
        subscription_id: webhookId,
        org_id: org.orgId,
        event_id: eventId,
        event_type: 'emergency.declared',
        payload: null,
        status: 'failed',
        attempt_count: 8,
        next_attempt_at: at(0),
        claimed_until: null,
        claimed_by: null,
        last_response_code: 500,
        last_error: null,
        created_at: at(0),
        updated_at: at(0),
        completed_at: at(0),
      })
      .execute();
    // The history 15 replays of an always failing endpoint leave: 8 attempts each.
    await db
      .insertInto('webhook_attempts')
      .values(
        Array.from({ length: 120 }, (_, n) => ({
          id: newId(),
          delivery_id: deliveryId,
          subscription_id: webhookId,
          org_id: org.orgId,
          event_id: eventId,
          event_type: 'emergency.declared',
          attempt_number: (n % 8) + 1,
          started_at: at(n + 1),
          duration_ms: 5,
          outcome: 'failed',
          response_code: 500,
          response_body: null,
          error: null,
          worker_id: 'test',
        })),
      )
      .execute();
    const res = await fetch(`${server.url}/api/admin/v1/webhooks/${webhookId}/deliveries?limit=200`, { headers: { authorization: `Bearer ${adminKey}` } });
    assert.equal(res.status, 200);
    const [delivery] = (await res.json()).items;
    assert.equal(delivery.deliveryId, deliveryId);
    assert.deepEqual(
      delivery.attempts.map((a: { at: string }) => a.at),
      Array.from({ length: 50 }, (_, n) => at(71 + n)),
    );
  });

  it('a 422 lists at most 100 issues and cuts long names, whatever the body holds', async () => {
    const keys = Array.from({ length: 100_000 }, (_, i) => i.toString(36));
    const declare = (body: string) =>
      fetch(`${server.base}/orgs/${org.orgId}/emergencies`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
      });
    const res = await declare(`{${keys.map((k) => `"${k}":0`).join(',')}}`);
    const text = await res.text();
    assert.equal(res.status, 422);
    assert.ok(Buffer.byteLength(text) <= MiB, `${Buffer.byteLength(text)} bytes`);
    const { detail } = JSON.parse(text);
    assert.equal(detail.length, 101);
    assert.deepEqual(detail[0], { loc: ['body', '0'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' });
    assert.deepEqual(detail[100], { loc: ['body'], msg: '99900 more issues are not listed; correct these and send again.', type: 'too_many_issues' });

    const long = await declare(JSON.stringify({ [escaped(170_000)]: 0 }));
    assert.equal(long.status, 422);
    const [issue] = (await long.json()).detail;
    assert.equal(issue.loc[1], `${escaped(256)}…`);

    const tool = await rawMcp(
      server.url,
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_emergency","arguments":{"orgId":"${org.orgId}",${keys.map((k) => `"${k}":0`).join(',')}}}}`,
      { authorization: `Bearer ${key}`, 'mcp-protocol-version': '2025-06-18' },
    );
    assert.equal(tool.status, 200);
    assert.ok(Buffer.byteLength(tool.text) <= MiB, `${Buffer.byteLength(tool.text)} bytes`);
    assert.equal(tool.message.result.isError, true);
  });

  it('tool results stay under 1 MiB too', async () => {
    const headers = { authorization: `Bearer ${key}`, 'mcp-protocol-version': '2025-06-18' };
    for (const [name, args] of [
      ['list_emergencies', { orgId: org.orgId, limit: 200 }],
      ['list_events', { orgId: org.orgId, limit: 500 }],
      ['list_audit_logs', { orgId: org.orgId, limit: 200 }],
    ] as const) {
      const raw = await rawMcp(server.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }, headers);
      assert.equal(raw.status, 200);
      assert.ok(!raw.message.result.isError, raw.text.slice(0, 300));
      assert.ok(Buffer.byteLength(raw.text) <= MiB, `${name}: ${Buffer.byteLength(raw.text)} bytes`);
      assert.equal(typeof raw.message.result.structuredContent.nextCursor, 'string', name);
    }
  });
});
