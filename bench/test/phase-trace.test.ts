/**
 * The device benchmark's phase trace (bench/lib/phase-trace.mjs, BENCH_PHASES=1): loaded into a real server
 * process, it must record each declare's moments in order and on the clock of the benchmark's own process,
 * or the split of declare → frame in the README means nothing.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { monotonicMs } from '../lib/device-swarm.js';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { type ChildServer, spawnServer } from '../../test/helpers/child-server.js';
import { freshDatabaseUrl } from '../../test/helpers/db.js';
import { client } from '../../test/helpers/http.js';
import { createOrgTree, mintKey } from '../../test/helpers/server.js';
import { connectDevice } from '../../test/devices/support.js';

const PHASE_TRACE = fileURLToPath(new URL('../lib/phase-trace.mjs', import.meta.url));

describe('benchmark phase trace', () => {
  const database = freshDatabaseUrl();
  const dir = mkdtempSync(join(tmpdir(), 'phase-trace-'));
  const file = join(dir, 'phases.txt');
  let server: ChildServer;
  let orgId = '';
  let key = '';
  const tokens: string[] = [];

  before(async () => {
    const ctx = createContext(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }));
    try {
      await migrateToLatest(ctx.db);
      orgId = (await createOrgTree(ctx)).orgId;
      key = (await mintKey(ctx, { subjectType: 'org', subjectId: orgId })).key;
      for (const name of ['North', 'South']) tokens.push((await createDevice(ctx, operatorCaller(), orgId, { name })).token);
    } finally {
      await ctx.db.close();
    }
    server = await spawnServer({ DATABASE_URL: database.url, NODE_OPTIONS: `--import ${PHASE_TRACE}`, PHASE_TRACE_FILE: file });
  });
  after(async () => {
    await server?.kill();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('records each declare as received ≤ handler ≤ committed ≤ written, within the sender’s send and the frame’s arrival', async () => {
    const devices = await Promise.all(tokens.map((token) => connectDevice(`${server.url.replace('http', 'ws')}/devices/v1/stream`, token)));
    const api = client(`${server.url}/api/public/v1`, key);
    const windows: [number, number][] = [];
    try {
      for (let i = 1; i <= 3; i++) {
        const sent = monotonicMs();
        assert.equal((await api.post(`/orgs/${orgId}/emergencies`, { description: `traced ${i}` })).status, 201);
        for (const device of devices) await device.until(() => device.events.length === i, 2_000, `frame ${i}`);
        windows.push([sent, monotonicMs()]);
      }
    } finally {
      for (const device of devices) await device.close();
    }
    assert.equal(existsSync(file), false, 'nothing is written before the signal');
    server.child.kill('SIGUSR2');
    let text = '';
    for (let i = 0; i < 50 && !text; i++) {
      await new Promise((r) => setTimeout(r, 100));
      if (existsSync(file)) text = readFileSync(file, 'utf8');
    }
    const lines = text.trim().split('\n');
    assert.equal(lines.length, 3, text);
    lines.forEach((line, i) => {
      const [org, offset, ...rest] = line.split(' ');
      const [received, handler, committed, written, sockets] = rest.map(Number);
      assert.equal(org, orgId);
      assert.equal(Number(offset), i + 1);
      assert.equal(sockets, 2);
      const [sent, arrived] = windows[i]!;
      assert.ok(sent <= received! && received! <= handler! && handler! <= committed! && committed! <= written! && written! <= arrived, line);
    });
  });
});
