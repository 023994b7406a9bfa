import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { connectMcp, type McpConnection } from '../helpers/mcp.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** How read tools fail: a crafted cursor is named as such, and a fault never claims a write's outcome is unknown. */
describe('tool server: failures of read tools', () => {
  let server: TestServer;
  let org: OrgFixture;
  let mcp: McpConnection;

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    mcp = await connectMcp(server.url, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    await mcp.ok('create_emergency', { orgId: org.orgId, description: 'first' });
  });
  after(async () => {
    await mcp.close();
    await server.close();
  });

  it('answers a crafted cursor with 422 cursor_invalid on every list tool, and a real one still pages', async () => {
    const crafted = [cursorOf(['x\u0000', 'y']), cursorOf([1.5]), cursorOf([2 ** 31]), cursorOf([2 ** 63]), cursorOf([['a']]), cursorOf([1, 2, 3, 4]), '!!'];
    for (const tool of ['list_emergencies', 'list_audit_logs', 'list_events']) {
      for (const cursor of crafted) {
        const error = await mcp.fail(tool, { orgId: org.orgId, cursor });
        assert.equal(error.status, 422, `${tool} ${cursor}`);
        assert.equal(error.error, 'cursor_invalid', `${tool} ${cursor}`);
        assert.deepEqual(
          error.issues.map((i: { loc: unknown; type: string }) => [i.loc, i.type]),
          [[['cursor'], 'cursor_invalid']],
        );
        assert.match(error.message, /nextCursor/);
      }
    }
    await mcp.ok('create_emergency', { orgId: org.orgId, description: 'second' });
    const first = await mcp.ok('list_events', { orgId: org.orgId, limit: 1 });
    assert.equal(typeof first.nextCursor, 'string');
    const second = await mcp.ok('list_events', { orgId: org.orgId, limit: 1, cursor: first.nextCursor });
    assert.equal(second.items[0].offset, first.items[0].offset + 1);
    const error = await mcp.fail('list_events', { orgId: org.orgId, after: 2 ** 31 });
    assert.equal(error.status, 422);
    assert.deepEqual(error.issues[0].loc, ['after']);
  });

  it('says nothing was changed when a read tool meets an unexpected database error; a write tool still says its outcome is unknown', async () => {
    await sql`alter table events rename to events_away`.execute(server.ctx.db.db);
    try {
      const read = await mcp.fail('list_events', { orgId: org.orgId });
      assert.equal(read.status, 500);
      assert.equal(read.error, 'internal');
      assert.doesNotMatch(read.message, /outcome of a write/);
      assert.match(read.message, /nothing was changed/i);

      const write = await mcp.fail('create_emergency', { orgId: org.orgId, description: 'lost' });
      assert.equal(write.status, 500);
      assert.match(write.message, /outcome of a write is unknown/);
    } finally {
      await sql`alter table events_away rename to events`.execute(server.ctx.db.db);
    }
  });
});
