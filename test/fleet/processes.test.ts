import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { STARTUP_EXIT_CODES } from '../../src/cli/startup-failure.js';
import { loadConfig } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { createContext } from '../../src/create-context.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { type ChildServer, freePort, spawnServer } from '../helpers/child-server.js';
import { runCli } from '../helpers/cli.js';
import { freshDatabaseUrl, onPostgres } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, TEST_ENV } from '../helpers/server.js';
import { BaseStation } from './base-station.js';

const DEVICES = 20;
const PROCESSES = 2;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it holds; the failure names what was awaited and what `state` showed last. */
async function waitFor(what: string, check: () => boolean | Promise<boolean>, state: () => unknown = () => '', timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}: ${JSON.stringify(state())}`);
    await sleep(100);
  }
}

/** The "Server listening at" lines of a supervisor's processes, one per process that started. */
const listening = (server: ChildServer): { pid: number; msg: string }[] =>
  server.lines.filter((line) => typeof line.msg === 'string' && line.msg.startsWith('Server listening at '));

/** The metrics URL a process of the supervisor logged. */
function metricsUrlOf(server: ChildServer, pid: number): string | undefined {
  return server.lines.find((line) => line.pid === pid && line.msg === 'metrics listener started')?.url;
}

/** The devices_connected gauge of one process, from its own metrics port. */
async function devicesConnected(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const match = /^devices_connected (\d+)$/m.exec(text);
  assert.ok(match, `devices_connected in ${metricsUrl}`);
  return Number(match[1]);
}

const running = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A port free right now whose next port is free too: the metrics ports of two processes. */
async function freePortPair(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port >= 65535) continue;
    const probe = createServer();
    const free = await new Promise<boolean>((resolve) => {
      probe.once('error', () => resolve(false));
      probe.listen(port + 1, '127.0.0.1', () => resolve(true));
    });
    if (free) {
      await new Promise((resolve) => probe.close(resolve));
      return port;
    }
  }
}

describe(`serve --role gateway --processes ${PROCESSES}: one device port shared by ${PROCESSES} processes under a supervisor`, {
  skip: onPostgres ? false : 'several processes share one PostgreSQL database: set DATABASE_URL=postgres://... (--processes above 1 refuses SQLite)',
}, () => {
  const database = freshDatabaseUrl();
  const env = { DATABASE_URL: database.url, HOST: '127.0.0.1', RATE_LIMIT_PER_KEY: '100000', METRICS_TOKEN: '' };
  let gateway: ChildServer;
  let api: ChildServer;
  let ctx: AppContext;
  let metricsBase = 0;
  let orgId = '';
  let key = '';
  const devices: BaseStation[] = [];

  /** Declares an emergency through the api process and returns its offset in the event feed. */
  async function declare(description: string): Promise<number> {
    const orgApi = client(`${api.url}/api/public/v1`, key);
    assert.equal((await orgApi.post(`/orgs/${orgId}/emergencies`, { description })).status, 201);
    const feed = await orgApi.get(`/orgs/${orgId}/events?limit=100`);
    assert.equal(feed.status, 200);
    return feed.body.lastOffset;
  }

  before(async () => {
    metricsBase = await freePortPair();
    // On a fresh schema: the supervisor applies the migrations once, before its processes start.
    gateway = await spawnServer({ ...env, METRICS_PORT: String(metricsBase) }, ['--role', 'gateway', '--processes', String(PROCESSES)]);
    await waitFor(
      `${PROCESSES} processes listening`,
      () => listening(gateway).length === PROCESSES,
      () => gateway.lines.slice(-5),
    );
    api = await spawnServer(env, ['--role', 'api']);
    ctx = createContext(loadConfig({ ...TEST_ENV, DATABASE_URL: database.url }));
    orgId = (await createOrgTree(ctx)).orgId;
    key = (await mintKey(ctx, { subjectType: 'org', subjectId: orgId })).key;
    const url = `${gateway.url.replace(/^http/, 'ws')}/devices/v1/stream`;
    for (let i = 0; i < DEVICES; i++) {
      const { token } = await createDevice(ctx, operatorCaller(), orgId, { name: `Base station ${i}` });
      devices.push(new BaseStation(token, [url], 0));
    }
    await Promise.all(devices.map((device) => device.start()));
  });

  after(async () => {
    await Promise.all(devices.map((device) => device.stop()));
    for (const server of [gateway, api]) await server?.kill();
    await ctx?.db.close();
    await database.drop();
  });

  it('listens on one port in each process, each with a metrics port of its own, and spreads the devices over them', async () => {
    const lines = listening(gateway);
    assert.deepEqual(
      lines.map((line) => line.msg),
      Array(PROCESSES).fill(`Server listening at ${gateway.url}`),
    );
    const pids = lines.map((line) => line.pid);
    assert.equal(new Set([...pids, gateway.child.pid]).size, PROCESSES + 1, 'a process of its own each, apart from the supervisor');
    const metricsUrls = pids.map((pid) => metricsUrlOf(gateway, pid));
    assert.deepEqual(metricsUrls.sort(), [`http://127.0.0.1:${metricsBase}/metrics`, `http://127.0.0.1:${metricsBase + 1}/metrics`]);
    let counts: number[] = [];
    await waitFor(
      `${DEVICES} devices counted`,
      async () => {
        counts = await Promise.all(metricsUrls.map((url) => devicesConnected(url!)));
        return counts.reduce((a, b) => a + b, 0) === DEVICES;
      },
      () => counts,
    );
    for (const count of counts) assert.ok(count > 0, `every process holds devices: ${counts}`);
  });

  it('delivers an event declared through the api process to every device, whichever process holds its socket', async () => {
    const offset = await declare('Fire on floor 1');
    await waitFor(
      'every device to handle the event',
      () => devices.every((device) => device.lastHandled === offset),
      () => devices.map((d) => d.offsets),
    );
    for (const device of devices) assert.deepEqual(device.offsets, [offset]);
  });

  it('replaces a process killed with SIGKILL; its devices reconnect with `after` and get the next event once', async () => {
    const [victim, survivor] = listening(gateway).map((line) => line.pid) as [number, number];
    const victimMetrics = metricsUrlOf(gateway, victim)!;
    const onVictim = await devicesConnected(victimMetrics);
    process.kill(victim, 'SIGKILL');

    // The supervisor logs the death and forks a replacement, which listens on the same port and metrics port.
    await waitFor(
      'a replacement listening',
      () => listening(gateway).length === PROCESSES + 1,
      () => gateway.lines.slice(-5),
    );
    const replacement = listening(gateway).at(-1)!;
    assert.ok(![victim, survivor].includes(replacement.pid));
    assert.equal(replacement.msg, `Server listening at ${gateway.url}`);
    const death = gateway.lines.find((line) => line.name === 'supervisor' && line.processPid === victim);
    assert.ok(death, 'the supervisor logged the death');
    assert.equal(death.level, 50);
    assert.equal(death.signal, 'SIGKILL');
    assert.equal(death.pid, gateway.child.pid);
    await waitFor('the replacement metrics listener', () => metricsUrlOf(gateway, replacement.pid) !== undefined);
    assert.equal(metricsUrlOf(gateway, replacement.pid), victimMetrics);

    // The victim's devices reconnected to the same port, the others kept their socket.
    await waitFor(
      'every device connected again',
      () => devices.every((device) => device.open) && devices.filter((device) => device.connections.length === 2).length === onVictim,
      () => devices.map((device) => [device.open, device.connections.length]),
    );
    assert.equal(devices.filter((device) => device.connections.length === 1).length, DEVICES - onVictim);
    const metricsUrls = [metricsUrlOf(gateway, survivor)!, victimMetrics];
    let counts: number[] = [];
    await waitFor(
      `${DEVICES} devices counted again`,
      async () => {
        counts = await Promise.all(metricsUrls.map(devicesConnected));
        return counts.reduce((a, b) => a + b, 0) === DEVICES;
      },
      () => counts,
    );

    const first = devices[0]!.offsets[0]!;
    const offset = await declare('Fire on floor 2');
    await waitFor(
      'every device to handle the next event',
      () => devices.every((device) => device.lastHandled === offset),
      () => devices.map((d) => d.offsets),
    );
    for (const device of devices) {
      assert.deepEqual(device.offsets, [first, offset]);
      assert.deepEqual(device.duplicates, []);
    }
  });

  it('passes SIGTERM on to every process and exits 0 once they all stopped', async () => {
    const pids = listening(gateway).map((line) => line.pid);
    const alive = pids.filter(running);
    assert.equal(alive.length, PROCESSES);
    const exited = new Promise<number | null>((resolve) => gateway.child.once('exit', (code) => resolve(code)));
    gateway.child.kill('SIGTERM');
    assert.equal(await exited, 0);
    for (const pid of alive) {
      assert.equal(running(pid), false, `process ${pid} stopped`);
      assert.ok(
        gateway.lines.some((line) => line.pid === pid && line.msg === 'shutting down' && line.signal === 'SIGTERM'),
        `process ${pid} shut down on the SIGTERM passed on`,
      );
    }
    assert.ok(gateway.lines.some((line) => line.name === 'supervisor' && line.msg === 'every process stopped'));
  });
});

describe('serve --processes: starts refused before anything listens', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'emergency-api-processes-'));
  const sqlite = { DATABASE_URL: `sqlite:${join(scratch, 'db', 'emergency.db')}`, PORT: '0', HOST: '127.0.0.1' };

  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('on SQLite, more than one process of any role: 87, naming DATABASE_URL, and no database created', async () => {
    for (const [args, env] of [
      [['--processes', '2'], {}],
      [['--role', 'all', '--processes', '3'], {}],
      [[], { PROCESSES: '2' }],
    ] as const) {
      const run = await runCli(['serve', ...args], { ...sqlite, ...env });
      assert.equal(run.code, STARTUP_EXIT_CODES.roleNeedsPostgres, run.stderr);
      assert.match(run.stderr, /^error: --processes \d \(or PROCESSES\) runs \d processes sharing one database, but DATABASE_URL=sqlite:/);
      assert.match(run.stderr, /DATABASE_URL=postgres:\/\//);
    }
    assert.deepEqual(readdirSync(scratch), [], 'no database created');
  });

  it('a count that is not 1 to 64: a usage error (exit 2) for the option, an invalid configuration (78) for PROCESSES or a METRICS_PORT too high', async () => {
    for (const value of ['0', 'abc', '65']) {
      const run = await runCli(['serve', `--processes=${value}`], sqlite);
      assert.equal(run.code, 2, `--processes ${value}: ${run.stderr}`);
      assert.match(run.stderr, /^error: --processes must be a whole number from 1 to 64\nusage: emergency-api serve /);
    }
    const env = await runCli(['serve'], { ...sqlite, PROCESSES: '0' });
    assert.equal(env.code, 78, env.stderr);
    assert.match(env.stderr, /PROCESSES/);
    // Process i listens on METRICS_PORT + i: the last one's port must exist.
    const metrics = await runCli(['serve', '--processes', '2'], { ...sqlite, METRICS_PORT: '65535' });
    assert.equal(metrics.code, 78, metrics.stderr);
    assert.match(metrics.stderr, /METRICS_PORT: .*choose METRICS_PORT=65534 or below/);
  });

  it('--demo with more than one process: a usage error, exit 2 (the demo keys are printed by one process)', async () => {
    for (const [args, env] of [
      [['--demo', '--processes', '2'], {}],
      [['--demo'], { PROCESSES: '2' }],
    ] as const) {
      const run = await runCli(['serve', ...args], { ...sqlite, ...env });
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /^error: --demo prints its keys from one process/);
    }
  });

  it('on PostgreSQL, PORT in use: the supervisor exits 85, as its processes do, naming PORT', {
    skip: onPostgres ? false : 'several processes need PostgreSQL: set DATABASE_URL=postgres://...',
  }, async () => {
    const database = freshDatabaseUrl();
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
    const port = (holder.address() as { port: number }).port;
    try {
      const run = await runCli(['serve', '--role', 'gateway', '--processes', '2'], { DATABASE_URL: database.url, HOST: '127.0.0.1', PORT: String(port) });
      assert.equal(run.code, STARTUP_EXIT_CODES.portInUse, run.stderr);
      assert.match(run.stderr, new RegExp(`error: PORT=${port}: the port is already in use on 127\\.0\\.0\\.1`));
    } finally {
      await new Promise((resolve) => holder.close(resolve));
      await database.drop();
    }
  });
});
