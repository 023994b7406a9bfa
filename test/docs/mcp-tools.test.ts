import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PERMISSIONS } from '../../src/domain/access/permissions.js';
import { connectMcp, type McpConnection } from '../helpers/mcp.js';
import { createOrgTree, mintKey, startTestServer, type TestServer } from '../helpers/server.js';

const PAGE = readFileSync(resolve(import.meta.dirname, '../../docs/mcp.md'), 'utf8');

interface DocumentedTool {
  permission: string;
  required: string[];
  optional: string[];
}

/**
 * The rows of docs/mcp.md's tool table. In the arguments column a backquoted name is an argument, `name?` an
 * optional one; parenthesised notes and `{...}` shapes are not arguments.
 */
function documentedTools(): Map<string, DocumentedTool> {
  const tools = new Map<string, DocumentedTool>();
  for (const row of PAGE.matchAll(/^\| `(\w+)` \| `([a-z]+:[a-z]+)` \| (.*?) \| .* \|$/gm)) {
    const args = row[3]!.replace(/\([^)]*\)/g, '');
    const names = [...args.matchAll(/`(\w+)(\??)`/g)];
    tools.set(row[1]!, {
      permission: row[2]!,
      required: names.filter((n) => !n[2]).map((n) => n[1]!),
      optional: names.filter((n) => n[2]).map((n) => n[1]!),
    });
  }
  return tools;
}

const WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];

describe('docs/mcp.md matches the tools the server lists', () => {
  let server: TestServer;
  let writer: McpConnection;
  let reader: McpConnection;
  const documented = documentedTools();

  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
    const org = await createOrgTree(server.ctx);
    writer = await connectMcp(server.url, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    reader = await connectMcp(server.url, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['read'] })).key);
  });
  after(async () => {
    await writer.close();
    await reader.close();
    await server.close();
  });

  it('the table names every listed tool, and only those, with its permission', async () => {
    const all = (await writer.client.listTools()).tools.map((t) => t.name).sort();
    const read = (await reader.client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual([...documented.keys()].sort(), all);
    const documentedRead = [...documented].filter(([, t]) => t.permission.endsWith(':read')).map(([name]) => name);
    assert.deepEqual(documentedRead.sort(), read, 'the read tools are those a read-only key lists');
    assert.ok(
      [...documented.values()].every((t) => (PERMISSIONS as readonly string[]).includes(t.permission)),
      'a permission is one of the permissions',
    );
    for (const tool of (await writer.client.listTools()).tools) {
      assert.match(
        tool.description ?? '',
        new RegExp(`Permission: ${documented.get(tool.name)?.permission}\\.$`),
        `${tool.name}: its description names the same permission`,
      );
    }
    // The prose counts them too.
    assert.match(PAGE, new RegExp(`as ${WORDS[all.length]} tools`));
    assert.match(PAGE, new RegExp(`the ${WORDS[read.length]} read tools`));
  });

  it("each row's arguments are the tool's input schema: its properties, and which of them are required", async () => {
    for (const tool of (await writer.client.listTools()).tools) {
      const row = documented.get(tool.name);
      assert.ok(row, `${tool.name} is in the table`);
      const schema = tool.inputSchema as { properties?: Record<string, unknown>; required?: string[] };
      assert.deepEqual([...row.required, ...row.optional].sort(), Object.keys(schema.properties ?? {}).sort(), `${tool.name}: arguments`);
      assert.deepEqual([...row.required].sort(), [...(schema.required ?? [])].sort(), `${tool.name}: required arguments`);
    }
  });
});
