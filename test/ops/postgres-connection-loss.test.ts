import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { onDatabase, onPostgres } from '../helpers/db.js';
import { createOrgTree, orgApi, startTestServer } from '../helpers/server.js';

describe('PostgreSQL ending the service’s idle connections', {
  skip: onPostgres ? false : 'pooled connections exist only on PostgreSQL (CI runs this suite there)',
}, () => {
  it('keeps serving: the pool drops the ended connections and opens new ones', async () => {
    // Without the webhook dispatcher, nothing else takes connections from the pool meanwhile.
    const server = await startTestServer({}, { dispatcher: false });
    // What the server would log (its logger is silent in tests).
    const reported: string[] = [];
    server.ctx.db.reportFailures((_err, consequence) => reported.push(consequence));
    try {
      const org = await createOrgTree(server.ctx);
      const api = await orgApi(server, org.orgId);
      const declared = await api.post(`/orgs/${org.orgId}/emergencies`, {});
      assert.equal(declared.status, 201);

      // The server backends of every idle connection of the pool, as a restart of PostgreSQL, an
      // administrator or an idle timeout on the way would end them.
      const pool = server.ctx.db.pgPool!;
      // The declare's wake-up of other instances (a NOTIFY sent after the commit, not awaited by the
      // answer) may still hold a connection: wait until every connection is back in the pool.
      const quiet = Date.now() + 5_000;
      while ((pool.idleCount < pool.totalCount || pool.waitingCount > 0) && Date.now() < quiet) await new Promise((r) => setTimeout(r, 10));
      const idle = await Promise.all(Array.from({ length: pool.idleCount }, () => pool.connect()));
      const pids = idle.map((c) => (c as unknown as { processID: number }).processID);
      for (const c of idle) c.release();
      assert.ok(pids.length > 0);
      await onDatabase('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [pids]);
      const deadline = Date.now() + 10_000;
      while (reported.length < pids.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.equal(reported.length, pids.length, 'every ended connection is reported');
      for (const consequence of reported) assert.match(consequence, /idle PostgreSQL connection ended; the pool opens a new one/);
      assert.equal(pool.totalCount, 0, 'the pool dropped every ended connection');

      // Still alive: reads and writes work on fresh connections.
      const read = await api.get(`/orgs/${org.orgId}/emergencies/${declared.body.emergencyId}`);
      assert.equal(read.status, 200);
      assert.equal(read.body.emergencyId, declared.body.emergencyId);
      assert.equal((await api.post(`/orgs/${org.orgId}/emergencies`, {})).status, 201);
    } finally {
      await server.close();
    }
  });
});
