import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { provisionDemo } from '../../src/cli/demo.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);
const README = readFileSync(resolve(import.meta.dirname, '../../README.md'), 'utf8');

/** The first ```sh block after a README heading. */
function shellBlock(heading: string): string {
  const at = README.indexOf(`\n${heading}\n`);
  assert.ok(at >= 0, `README has "${heading}"`);
  const start = README.indexOf('```sh\n', at) + '```sh\n'.length;
  return README.slice(start, README.indexOf('\n```', start));
}

/**
 * Runs a README block with bash as a reader would paste it, against a fresh server: only the host and
 * the values `npm start` prints are swapped in. Every curl reports its status on stderr.
 */
async function replay(block: string, cwd: string): Promise<{ statuses: number[]; stdout: string }> {
  const script = ['set -euo pipefail', `curl() { command curl -w '%{stderr}STATUS %{http_code}\\n' "$@"; }`, block].join('\n');
  const { stdout, stderr } = await run('bash', ['-c', script], { cwd, timeout: 60_000 });
  const statuses = [...stderr.matchAll(/^STATUS (\d+)$/gm)].map((m) => Number(m[1]));
  return { statuses, stdout };
}

describe('README walk-throughs, pasted as written', () => {
  let server: TestServer;
  let demo: Awaited<ReturnType<typeof provisionDemo>>;
  let dir: string;

  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
    demo = await provisionDemo(server.ctx);
    dir = mkdtempSync(join(tmpdir(), 'readme-'));
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const hosted = (block: string) => block.replaceAll('http://127.0.0.1:8080', server.url).replaceAll('ws://127.0.0.1:8080', server.url.replace(/^http/, 'ws'));

  it('Walk-through: every command answers as its comment says', async () => {
    const block = hosted(shellBlock('## Walk-through'))
      .replace(/^ORG=.*$/m, `ORG=${demo.orgId}`)
      .replace(/^KEY=.*$/m, `KEY=${demo.key}`);
    const { statuses, stdout } = await replay(`${block}\necho; echo "EMERGENCY_ID=$EMERGENCY_ID"`, dir);
    assert.deepEqual(statuses, [200, 201, 200, 200, 200, 201, 200, 200, 200, 200, 200]);
    const emergencyId = /^EMERGENCY_ID=([0-9a-f-]{36})$/m.exec(stdout)?.[1];
    assert.ok(emergencyId, 'the declare captured the emergency id');
    assert.match(stdout, new RegExp(`"emergencyId":"${emergencyId}","orgId":"${demo.orgId}","status":"resolved"`));
  });

  it('Managing tenants over HTTP: from the admin key to a webhook and a fleet of devices', async () => {
    // The simulator runs until stopped: the test checks its device in the device list instead.
    const block = hosted(shellBlock('## Managing tenants over HTTP'))
      .replace(/^AK=.*$/m, `AK=${demo.adminKey}`)
      .split('\n')
      .filter((line) => !line.includes('device simulate') && line.trim() !== 'sleep 2')
      .join('\n');
    const { statuses, stdout } = await replay(`${block}\necho; echo "ORG=$ORG"`, dir);
    assert.deepEqual(statuses, [201, 201, 201, 201, 201, 201, 201, 201]);
    const orgId = /^ORG=(.*)$/m.exec(stdout)![1]!;
    const devices = JSON.parse(readFileSync(join(dir, 'devices.json'), 'utf8'));
    assert.deepEqual(
      devices.items.map((d: { name: string; orgId: string }) => [d.name, d.orgId]),
      [
        ['Gym', orgId],
        ['Library', orgId],
      ],
    );
    assert.match(stdout, /"secret":"whsec_/);
    assert.match(stdout, /"status":"declared"/);
  });
});
