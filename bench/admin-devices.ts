// Provisioning a fleet: N base stations (default 1,000) registered through the admin API in one request
// (`POST /api/admin/v1/orgs/{org_id}/devices` with `{devices:[...]}`), through the admin API one request
// per device, and through the admin CLI (`emergency-api admin device create`, one process per device,
// run two at a time: the machine's cores) for BENCH_CLI_DEVICES of them (default 100: each process
// starts Node and opens the database, so a thousand would take many minutes and say nothing more about the
// rate). All against the same running service and database, same run. Reports wall time, devices per
// second and each path's ratio to the one-request fleet.
// Usage: node --import tsx bench/admin-devices.ts   (BENCH_DEVICES=1000, BENCH_CLI_DEVICES=100; DATABASE_URL=postgres://... for PostgreSQL; BENCH_JSON=path)
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { BIN, cli, startProcess, stopProcess } from './lib/harness.js';
import { benchDatabase, freePort, writeBenchJson } from './lib/support.js';

const run = promisify(execFile);
const DEVICES = Number(process.env.BENCH_DEVICES ?? 1000);
const CLI_DEVICES = Math.min(DEVICES, Number(process.env.BENCH_CLI_DEVICES ?? 100));
const CLI_PARALLEL = Number(process.env.BENCH_CLI_PARALLEL ?? 2);

const db = benchDatabase('admin_devices');
const port = await freePort();
const env = { DATABASE_URL: db.url, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', RATE_LIMIT_PER_KEY: '1000000' };
const demo = cli(['admin', 'demo'], env);
const service = await startProcess([BIN, 'serve'], env, `http://127.0.0.1:${port}/healthz`);
const admin = `http://127.0.0.1:${port}/api/admin/v1`;
const headers = { authorization: `Bearer ${demo.adminKey}`, 'content-type': 'application/json' };

async function createOrg(name: string): Promise<string> {
  const res = await fetch(`${admin}/enterprises/${demo.enterpriseId}/orgs`, { method: 'POST', headers, body: JSON.stringify({ name }) });
  return ((await res.json()) as { orgId: string }).orgId;
}

async function timed(what: string, fn: () => Promise<number>): Promise<{ path: string; devices: number; seconds: number; perSecond: number }> {
  const started = process.hrtime.bigint();
  const devices = await fn();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { path: what, devices, seconds: Math.round(seconds * 1000) / 1000, perSecond: Math.round(devices / seconds) };
}

const names = Array.from({ length: DEVICES }, (_, i) => ({ name: `Station ${i}` }));

const fleetOrg = await createOrg('Fleet in one request');
const fleet = await timed('API, one request', async () => {
  const res = await fetch(`${admin}/orgs/${fleetOrg}/devices`, { method: 'POST', headers, body: JSON.stringify({ devices: names }) });
  if (res.status !== 201) throw new Error(`fleet answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { items: unknown[] }).items.length;
});

const singlesOrg = await createOrg('One request per device');
const singles = await timed('API, one request per device', async () => {
  let created = 0;
  for (const body of names) {
    const res = await fetch(`${admin}/orgs/${singlesOrg}/devices`, { method: 'POST', headers, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`device answered ${res.status}`);
    await res.arrayBuffer();
    created++;
  }
  return created;
});

const cliOrg = await createOrg('One CLI process per device');
const viaCli = await timed(`CLI, one process per device (${CLI_PARALLEL} at a time)`, async () => {
  let next = 0;
  let created = 0;
  await Promise.all(
    Array.from({ length: CLI_PARALLEL }, async () => {
      while (next < CLI_DEVICES) {
        const i = next++;
        await run(process.execPath, [BIN, 'admin', 'device', 'create', '--org', cliOrg, '--name', `Station ${i}`, '--json'], {
          env: { ...process.env, ...env },
        });
        created++;
      }
    }),
  );
  return created;
});

await stopProcess(service);
await db.drop();

const rows = [fleet, singles, viaCli];
console.log(`database: ${db.dialect}; ${DEVICES} devices through the API, ${CLI_DEVICES} through the CLI`);
console.log(`${'path'.padEnd(44)} ${'seconds'.padStart(9)} ${'devices/s'.padStart(10)} ${'time/device x'.padStart(14)}`);
for (const r of rows) {
  console.log(
    `${r.path.padEnd(44)} ${r.seconds.toFixed(2).padStart(9)} ${String(r.perSecond).padStart(10)} ${(fleet.perSecond / r.perSecond).toFixed(1).padStart(14)}`,
  );
}
writeBenchJson({
  database: db.dialect,
  devices: DEVICES,
  cliDevices: CLI_DEVICES,
  rows,
  cliOverFleet: fleet.perSecond / viaCli.perSecond,
  singlesOverFleet: fleet.perSecond / singles.perSecond,
});
