import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice, listDevices } from '../../src/domain/devices/service.js';
import { declareEmergency } from '../../src/domain/emergencies/service.js';
import { deadlineOrg, registerDevice } from '../deadlines/support.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { connectDevice, type DeviceTestServer, startDeviceServer } from './support.js';

const BIN = fileURLToPath(new URL('../../bin/emergency-api.js', import.meta.url));
const run = promisify(execFile);

describe('device admin CLI and simulator', () => {
  let server: DeviceTestServer;
  const env = () => ({ ...process.env, DATABASE_URL: server.databaseUrl, LOG_LEVEL: 'silent' });
  const cli = async (...args: string[]) => JSON.parse((await run(process.execPath, [BIN, ...args, '--json'], { env: env() })).stdout);

  before(async () => {
    server = await startDeviceServer({ devices: { revocationCheckMs: 100, ackFlushMs: 50 } });
  });
  after(() => server.close());

  it('creates, lists (online state, last seen, acknowledged offset) and revokes a device', async () => {
    const org = await createOrgTree(server.ctx);
    const created = await cli('admin', 'device', 'create', '--org', org.orgId, '--name', 'Front desk');
    assert.deepEqual(Object.keys(created).sort(), ['id', 'token']);
    assert.match(created.token, /^enk_dev_[0-9a-f]{8}[0-9a-f]{64}$/);

    const offline = await listDevices(server.ctx, operatorCaller(), { orgId: org.orgId });
    assert.equal(offline[0]!.online, false);
    assert.equal(offline[0]!.lastSeenAt, null);

    const ws = await connectDevice(server.wsUrl, created.token);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    await client(server.base, key).post(`/orgs/${org.orgId}/emergencies`, { description: 'ack me' });
    await ws.until(() => ws.events.length === 1);
    ws.send({ type: 'ack', offset: 1 });
    await waitFor(async () => (await listDevices(server.ctx, operatorCaller(), { orgId: org.orgId }))[0]!.ackedOffset === 1, 'the ack to be recorded');

    // The CLI is another process: online state and acks come from the database.
    const listed = await cli('admin', 'device', 'list', '--org', org.orgId);
    assert.equal(listed.items.length, 1);
    assert.equal(listed.items[0].id, created.id);
    assert.equal(listed.items[0].name, 'Front desk');
    assert.equal(listed.items[0].online, true);
    assert.equal(listed.items[0].ackedOffset, 1);
    assert.ok(listed.items[0].lastSeenAt);
    assert.equal(JSON.stringify(listed).includes(created.token.slice(16)), false, 'the token is never listed');

    const revoked = await cli('admin', 'device', 'revoke', created.id);
    assert.equal(revoked.status, 'revoked');
    await ws.closed;
    assert.equal(ws.closeCode, 4401);
    const [afterRevoke] = await listDevices(server.ctx, operatorCaller(), { orgId: org.orgId });
    assert.equal(afterRevoke!.status, 'revoked');
    assert.equal(afterRevoke!.online, false);
  });

  it('simulate prints alerts and, after the server restarts, resumes with the events it missed', async () => {
    const org = await createOrgTree(server.ctx);
    const { token } = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Simulated' });
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const first = await startDeviceServer({ databaseUrl: server.databaseUrl });
    const port = Number(new URL(first.url).port);
    const sim = spawn(process.execPath, [BIN, 'device', 'simulate', '--url', first.wsUrl, '--token', token], { env: env() });
    const lines = collectLines(sim);
    try {
      await waitFor(() => lines.err.some((l) => l.startsWith('connected')), 'the simulator to connect', 60_000);
      await client(first.base, key).post(`/orgs/${org.orgId}/emergencies`, {
        categoryName: 'Fire',
        description: 'Smoke on floor 2',
        location: { floorId: '2' },
      });
      await waitFor(() => lines.out.length === 1, 'the first alert');
      assert.match(lines.out[0]!, /#1 EMERGENCY DECLARED \| Fire \(severity 5, #D32F2F\) \| "Smoke on floor 2" \| at floor 2/);

      await first.stop();
      // Written while no server runs; the simulator must get it after reconnecting with after=1.
      const other = createContext(loadConfig({ DATABASE_URL: server.databaseUrl }));
      await declareEmergency(other, operatorCaller(), org.orgId, { description: 'while the server was down' });
      await other.db.close();
      const second = await startDeviceServer({ databaseUrl: server.databaseUrl, port });
      try {
        await waitFor(() => lines.out.length === 2, 'the missed alert after reconnecting', 15_000);
        assert.match(lines.out[1]!, /#2 EMERGENCY DECLARED .*"while the server was down"/);
        assert.ok(lines.err.some((l) => l.includes('resuming after offset 1')));
      } finally {
        await second.stop();
      }
    } finally {
      sim.kill('SIGINT');
      await new Promise((r) => sim.once('exit', r));
      await first.stop();
    }
  });
});

/** The simulator with acknowledgement deadlines: what it prints of deadline events, and how it treats an event sent again. */
describe('device simulator and acknowledgement deadlines', { concurrency: true }, () => {
  let server: DeviceTestServer;
  const env = () => ({ ...process.env, DATABASE_URL: server.databaseUrl, LOG_LEVEL: 'silent' });

  before(async () => {
    server = await startDeviceServer({ devices: { ackFlushMs: 50 } });
  });
  after(() => server.close());

  async function simulate(token: string, ...args: string[]) {
    const sim = spawn(process.execPath, [BIN, 'device', 'simulate', '--url', server.wsUrl, '--token', token, ...args], { env: env() });
    const lines = collectLines(sim);
    const stop = async () => {
      sim.kill('SIGINT');
      if (sim.exitCode === null) await new Promise((r) => sim.once('exit', r));
    };
    return { lines, stop };
  }

  it('prints delivery_overdue naming the silent station, then delivery_completed once it acknowledges', async () => {
    const org = await deadlineOrg(server.ctx, server.url);
    assert.equal((await org.admin.patch(`/orgs/${org.orgId}`, { ackDeadlineSeconds: 5 })).status, 200);
    const desk = await registerDevice(org, 'Front desk');
    const gym = await registerDevice(org, 'Gym');
    const { lines, stop } = await simulate(desk.token);
    try {
      await waitFor(() => lines.err.some((l) => l.startsWith('connected')), 'the simulator to connect', 60_000);
      const declared = await org.api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire', description: 'Smoke in the gym' });
      assert.equal(declared.status, 201);
      const id = declared.body.emergencyId;
      await waitFor(() => lines.out.length === 2, 'the alert and the overdue event', 20_000);
      assert.match(lines.out[0]!, /#1 EMERGENCY DECLARED \| Fire/);
      assert.match(
        lines.out[1]!,
        new RegExp(`^\\[[^\\]]+\\] #2 DELIVERY OVERDUE: 1 of 2 silent: Gym \\(offline\\) \\| declared #1 not acknowledged within 5 s \\| emergency ${id}$`),
      );

      // The silent station connects and acknowledges everything up to the overdue event.
      const late = await connectDevice(server.wsUrl, gym.token);
      late.send({ type: 'ack', offset: 2 });
      await waitFor(() => lines.out.length === 3, 'the completed event', 20_000);
      assert.match(
        lines.out[2]!,
        new RegExp(`^\\[[^\\]]+\\] #3 DELIVERY COMPLETED: all 2 acknowledged \\| declared #1, \\d+\\.\\d s after the overdue \\| emergency ${id}$`),
      );
      await late.close();
    } finally {
      await stop();
    }
  });

  it('acknowledges again an event sent again before its deadline, without showing it twice', async () => {
    const org = await deadlineOrg(server.ctx, server.url);
    // Long enough for the simulator to start before the half-way re-send.
    assert.equal((await org.admin.patch(`/orgs/${org.orgId}`, { ackDeadlineSeconds: 30 })).status, 200);
    const device = await registerDevice(org, 'Resumed');
    const declared = await org.api.post(`/orgs/${org.orgId}/emergencies`, { description: 'shown before the restart' });
    assert.equal(declared.status, 201);
    const ackedOffset = async () => (await org.api.get(`/orgs/${org.orgId}/devices`)).body.items.find((d: any) => d.deviceId === device.id).ackedOffset;
    // A station that showed offset 1 but stopped before its acknowledgement reached the service resumes after it.
    const { lines, stop } = await simulate(device.token, '--after', '1');
    try {
      await waitFor(() => lines.err.some((l) => l.includes('resuming after offset 1')), 'the simulator to connect', 60_000);
      assert.equal(await ackedOffset(), 0);
      // Half-way to the deadline the service sends offset 1 again; the simulator acknowledges it.
      await waitFor(async () => (await ackedOffset()) === 1, 'the acknowledgement of the event sent again', 30_000);
      assert.deepEqual(lines.out, [], 'nothing shown twice');
    } finally {
      await stop();
    }
  });
});

function collectLines(child: ChildProcessWithoutNullStreams) {
  const lines = { out: [] as string[], err: [] as string[] };
  for (const [stream, into] of [
    [child.stdout, lines.out],
    [child.stderr, lines.err],
  ] as const) {
    let buffered = '';
    stream.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      into.push(...parts);
    });
  }
  return lines;
}

async function waitFor(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
