import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { TOOLS } from '../../src/mcp/tools.js';
import { SRC, sourceFiles } from './source-files.js';

/**
 * docs/architecture.md lists the files a new endpoint and its tool touch. This checks the list on every tool there is: its
 * operation is one function of a domain module, called by one route file and by the tool server, the tool has its row in
 * docs/mcp.md, and the route's operation is in the generated client.
 */
const ROOT = join(import.meta.dirname, '..', '..');
/** The tool server's files that call operations: its tools, and its resources (read through the same operations). */
const MCP_SURFACE = new Set(['mcp/tools.ts', 'mcp/resources.ts']);
const sources = sourceFiles();
const toolsText = readFileSync(join(SRC, 'mcp', 'tools.ts'), 'utf8');
const mcpPage = readFileSync(join(ROOT, 'docs', 'mcp.md'), 'utf8');
const generatedClient = readFileSync(join(ROOT, 'clients', 'typescript', 'src', 'schema.ts'), 'utf8');
const architecture = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');

/** The service function a tool's `run` calls, read from the tool's definition in mcp/tools.ts. */
function operationOf(tool: string): string {
  const start = toolsText.indexOf(`name: '${tool}'`);
  const end = toolsText.indexOf('defineTool(', start);
  const definition = toolsText.slice(start, end === -1 ? undefined : end);
  const call = /run:[\s\S]*?\b(\w+)\(ctx,/.exec(definition);
  assert.ok(call, `the run of ${tool} calls a service function with ctx`);
  return call[1]!;
}

/** Whether `text` calls the operation, or its JSON-text twin (REST answers the stored text as is; the tool takes the object). */
const calls = (text: string, fn: string) => new RegExp(`\\b${fn}(Json)?\\(`).test(text);

/** The operationId of the route (in a route file) whose definition calls the operation. */
function operationIdCalling(routeFile: string, fn: string): string | undefined {
  const blocks = routeFile.split(/(?=operationId: ')/).slice(1);
  return blocks.find((block) => calls(block, fn))?.match(/^operationId: '(\w+)'/)?.[1];
}

describe('a new endpoint and its tool', () => {
  it('docs/architecture.md lists the six places', () => {
    const list = architecture.slice(architecture.indexOf('**A new endpoint and its tool.**'), architecture.indexOf('**A new event type.**'));
    for (const place of [
      'domain/<concept>/schema.ts',
      'domain/<concept>/service.ts',
      'http/routes/<resource>.ts',
      'mcp/tools.ts',
      'docs/mcp.md',
      'clients/typescript/src/schema.ts',
    ]) {
      assert.ok(list.includes(`\`${place}\``), `the list names ${place}`);
    }
  });

  for (const tool of TOOLS) {
    it(`${tool.name}: one domain function, one route calling it, its row in docs/mcp.md, its operation in the client`, () => {
      const fn = operationOf(tool.name);
      const defined = sources.filter((s) => new RegExp(`export (async )?function ${fn}\\b`).test(s.text)).map((s) => s.path);
      assert.equal(defined.length, 1, `${fn} is defined once: ${defined.join(', ')}`);
      assert.match(defined[0]!, /^domain\/\w+\/[\w-]+\.ts$/, `${fn} lives in a domain concept`);
      const routes = sources.filter((s) => s.path.startsWith('http/routes/') && calls(s.text, fn)).map((s) => s.path);
      assert.equal(routes.length, 1, `one route file calls ${fn}: ${routes.join(', ')}`);
      // Outside the domain (which may reuse an operation), nothing but its route and the tool server (its tool, and the
      // resources and completions that read through the same operations) calls it.
      const others = sources
        .filter((s) => !s.path.startsWith('domain/') && !MCP_SURFACE.has(s.path) && s.path !== routes[0] && calls(s.text, fn))
        .map((s) => s.path);
      assert.deepEqual(others, [], `no other surface calls ${fn}`);
      assert.match(mcpPage, new RegExp(`^\\| \`${tool.name}\` \\|`, 'm'), `docs/mcp.md has a row for ${tool.name}`);
      const operationId = operationIdCalling(sources.find((s) => s.path === routes[0])!.text, fn);
      assert.ok(operationId, `the route calling ${fn} names its operationId`);
      assert.ok(generatedClient.includes(`${operationId}: {`), `the generated client has ${operationId}`);
    });
  }
});
