import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { inTransaction } from '../../src/db/connect.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { recordAudit } from '../../src/domain/audit/record.js';
import { declareEmergency } from '../../src/domain/emergencies/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, startTestServer, type TestServer } from '../helpers/server.js';

// Concurrent transactions may be committed together (group commit on SQLite); each must still succeed
// or fail on its own, and the org's event stream must stay gap-free and in order.
describe('concurrent writes', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  async function streamOf(orgId: string) {
    return server.ctx.db.db
      .selectFrom('events')
      .select(['stream_offset', 'emergency_id', 'event_type'])
      .where('org_id', '=', orgId)
      .orderBy('stream_offset')
      .execute();
  }

  it('fails only the declares that fail, keeps offsets gap-free and writes an event and audit entry per success', async () => {
    const org = await createOrgTree(server.ctx);
    const caller = operatorCaller('test');
    // Started in one tick, so they queue together; every third names an unknown category, every
    // fourth reuses one externalId.
    const outcomes = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) =>
        declareEmergency(server.ctx, caller, org.orgId, {
          description: `concurrent ${i}`,
          ...(i % 3 === 2 ? { categoryName: 'No such category' } : { categoryName: 'Fire' }),
          ...(i % 4 === 3 ? { externalId: 'shared-external-id' } : {}),
        }),
      ),
    );
    const declared = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    const failed = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : []));
    const unknownCategory = Array.from({ length: 40 }, (_, i) => i).filter((i) => i % 3 === 2).length;
    const sharedExternalIdWithValidCategory = Array.from({ length: 40 }, (_, i) => i).filter((i) => i % 4 === 3 && i % 3 !== 2).length;
    assert.equal(failed.length, unknownCategory + sharedExternalIdWithValidCategory - 1);
    assert.equal(declared.length, 40 - failed.length);
    for (const err of failed) {
      const e = err as { code?: string; issues?: { type: string }[] };
      assert.ok(e.code === 'external_id_conflict' || e.issues?.[0]?.type === 'category_not_found', String(err));
    }

    const stream = await streamOf(org.orgId);
    assert.deepEqual(
      stream.map((e) => e.stream_offset),
      declared.map((_, i) => i + 1),
    );
    assert.deepEqual(new Set(stream.map((e) => e.emergency_id)), new Set(declared.map((e) => e.emergencyId)));
    const emergencies = await server.ctx.db.db.selectFrom('emergencies').select('id').where('org_id', '=', org.orgId).execute();
    assert.equal(emergencies.length, declared.length);
    const audits = await server.ctx.db.db
      .selectFrom('audit_logs')
      .select('resource_id')
      .where('org_id', '=', org.orgId)
      .where('event_type', '=', 'emergency.declared')
      .execute();
    assert.deepEqual(new Set(audits.map((a) => a.resource_id)), new Set(declared.map((e) => e.emergencyId)));
  });

  it('rolls back everything a failing transaction wrote, and nothing of the others', async () => {
    const org = await createOrgTree(server.ctx);
    const caller = operatorCaller('test');
    const write = (i: number, fail: boolean) =>
      inTransaction(server.ctx.db, async (tx) => {
        await recordAudit(tx, caller, { orgId: org.orgId, eventCategory: 'test', eventType: `write.${i}`, resource: { type: 'test', id: String(i) } });
        if (fail) throw new Error(`write ${i} refused`);
        return i;
      });
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => write(i, i % 2 === 1)));
    assert.deepEqual(
      outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message)),
      Array.from({ length: 20 }, (_, i) => (i % 2 === 1 ? `write ${i} refused` : i)),
    );
    const rows = await server.ctx.db.db
      .selectFrom('audit_logs')
      .select('event_type')
      .where('org_id', '=', org.orgId)
      .where('event_category', '=', 'test')
      .execute();
    assert.deepEqual(rows.map((r) => r.event_type).sort(), Array.from({ length: 10 }, (_, i) => `write.${i * 2}`).sort());
  });

  it('answers every concurrent HTTP declare after it committed, with the stream in commit order', async () => {
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const api = client(server.base, key);
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) => api.post(`/orgs/${org.orgId}/emergencies`, { description: `http ${i}`, categoryName: 'Medical' })),
    );
    for (const res of responses) assert.equal(res.status, 201);
    // Each acknowledged emergency is readable at once and has its event.
    for (const res of responses) assert.equal((await api.get(`/orgs/${org.orgId}/emergencies/${res.body.emergencyId}`)).status, 200);
    const stream = await streamOf(org.orgId);
    assert.deepEqual(
      stream.map((e) => e.stream_offset),
      responses.map((_, i) => i + 1),
    );
    assert.deepEqual(new Set(stream.map((e) => e.emergency_id)), new Set(responses.map((r) => r.body.emergencyId)));
  });
});
