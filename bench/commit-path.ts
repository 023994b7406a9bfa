/**
 * The SQLite write path without HTTP: declares through the service function (what REST, MCP and the CLI
 * call), in this process, against a bare better-sqlite3 transaction of two inserts measured in the same run.
 *   - one at a time: each declare waits for its commit before the next is made (a batch of one, as on an
 *     idle server);
 *   - fifty at a time: fifty declares made together, committed as one group (as under load).
 * Each measurement runs in its own child process, alternating, BENCH_RUNS times (default 3); medians are
 * reported. It runs the compiled service (dist/, built by `npm ci` or `npm run build`).
 *
 *   node --import tsx bench/commit-path.ts
 *   BENCH_COMPARE_DIST=<another checkout>/dist: also measures that build in the same alternation (a change's
 *     before and after in one run), reported as its own rows and as ratios against this tree
 *   BENCH_DECLARES (default 10,000): declares per measurement, after a fifth as many to warm up
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTwoInsertDb } from './baselines/two-insert-db.js';
import { ROOT } from './lib/harness.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const DECLARES = Number(process.env.BENCH_DECLARES ?? 10_000);
const GROUP = 50;
const THIS_DIST = join(ROOT, 'dist');
const COMPARE_DIST = process.env.BENCH_COMPARE_DIST ?? '';

interface Measured {
  /** µs per declare (or per bare commit), one at a time. */
  oneAtATimeUs: number;
  /** µs per declare (or per bare insert pair), fifty at a time. */
  groupUs: number;
}

const now = () => Number(process.hrtime.bigint()) / 1e6;
const perItemUs = (startMs: number, count: number) => Number((((now() - startMs) * 1000) / count).toFixed(1));

/** Declares through the service of the build in `dist`, on a fresh SQLite file. */
async function measureService(dist: string, dir: string): Promise<Measured> {
  const load = (path: string) => import(join(dist, path));
  const { createContext } = await load('create-context.js');
  const { loadConfig } = await load('config.js');
  const { migrateToLatest } = await load('db/migrate.js');
  const { operatorCaller } = await load('domain/access/principal.js');
  const { createEnterprise, createOrg, createPartner } = await load('domain/orgs/service.js');
  const { declareEmergency } = await load('domain/emergencies/service.js');
  const ctx = createContext(loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'service.db')}`, LOG_LEVEL: 'silent' }));
  await migrateToLatest(ctx.db);
  const operator = operatorCaller();
  const partnerId = (await createPartner(ctx, operator, { name: 'Bench partner' })).partnerId;
  const enterpriseId = (await createEnterprise(ctx, operator, partnerId, { name: 'Bench enterprise' })).enterpriseId;
  const orgId = (await createOrg(ctx, operator, enterpriseId, { name: 'Bench org' })).orgId;
  const body = { description: 'bench', location: { floorId: '3' } };
  const declare = () => declareEmergency(ctx, operator, orgId, body);
  for (let i = 0; i < DECLARES / 5; i++) await declare();
  let start = now();
  for (let i = 0; i < DECLARES; i++) await declare();
  const oneAtATimeUs = perItemUs(start, DECLARES);
  start = now();
  for (let round = 0; round < DECLARES / GROUP; round++) await Promise.all(Array.from({ length: GROUP }, declare));
  const groupUs = perItemUs(start, DECLARES);
  await ctx.db.close();
  return { oneAtATimeUs, groupUs };
}

/** The floor: two inserts of about a declare's size per transaction (bench/baselines/two-insert-db.ts). */
async function measureBare(dir: string): Promise<Measured> {
  const { db, twoInserts, pairs } = openTwoInsertDb(join(dir, 'bare.db'));
  const body = JSON.stringify({ description: 'bench', location: { floorId: '3' }, padding: 'x'.repeat(600) });
  // One at a time: a transaction per pair, after the same hop to the event loop a batch of one takes.
  const one = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    twoInserts(body);
  };
  for (let i = 0; i < DECLARES / 5; i++) await one();
  let start = now();
  for (let i = 0; i < DECLARES; i++) await one();
  const oneAtATimeUs = perItemUs(start, DECLARES);
  start = now();
  for (let round = 0; round < DECLARES / GROUP; round++) {
    await new Promise((resolve) => setImmediate(resolve));
    pairs(body, GROUP);
  }
  const groupUs = perItemUs(start, DECLARES);
  db.close();
  return { oneAtATimeUs, groupUs };
}

/** Runs one measurement in a child process (this file with --child) and returns what it printed. */
function inChild(what: string): Measured {
  const result = spawnSync(process.execPath, [...process.execArgv, import.meta.filename, '--child', what], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`measurement ${what} failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as Measured;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

if (process.argv[2] === '--child') {
  const dir = mkdtempSync(join(tmpdir(), 'emergency-commit-bench-'));
  try {
    const what = process.argv[3]!;
    console.log(JSON.stringify(what === 'bare' ? await measureBare(dir) : await measureService(what, dir)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else {
  for (const dist of [THIS_DIST, COMPARE_DIST].filter(Boolean)) {
    if (!existsSync(join(dist, 'create-context.js'))) throw new Error(`${dist} is not a build of the service: run npm run build there first`);
  }
  const sides: [string, string][] = [
    ['bare better-sqlite3, 2 inserts', 'bare'],
    ['service declare (this tree)', THIS_DIST],
    ...(COMPARE_DIST ? ([[`service declare (${COMPARE_DIST})`, COMPARE_DIST]] as [string, string][]) : []),
  ];
  const runs = new Map<string, Measured[]>(sides.map(([label]) => [label, []]));
  for (let run = 0; run < RUNS; run++) for (const [label, what] of sides) runs.get(label)!.push(inChild(what));
  console.log(`SQLite write path, in process: ${DECLARES} declares per measurement, ${RUNS} alternating runs, medians (µs per declare)`);
  const medians = new Map<string, Measured>();
  for (const [label] of sides) {
    const measured = runs.get(label)!;
    const m = { oneAtATimeUs: median(measured.map((r) => r.oneAtATimeUs)), groupUs: median(measured.map((r) => r.groupUs)) };
    medians.set(label, m);
    console.log(`  ${label.padEnd(60)} one at a time ${m.oneAtATimeUs.toFixed(1).padStart(7)}   ${GROUP} at a time ${m.groupUs.toFixed(1).padStart(7)}`);
  }
  const service = medians.get(sides[1]![0])!;
  const bare = medians.get(sides[0]![0])!;
  console.log(
    `  service ÷ bare: one at a time ${(service.oneAtATimeUs / bare.oneAtATimeUs).toFixed(2)}×, ${GROUP} at a time ${(service.groupUs / bare.groupUs).toFixed(2)}×`,
  );
  if (COMPARE_DIST) {
    const other = medians.get(sides[2]![0])!;
    console.log(
      `  this tree ÷ ${COMPARE_DIST}: one at a time ${(service.oneAtATimeUs / other.oneAtATimeUs).toFixed(2)}×, ${GROUP} at a time ${(service.groupUs / other.groupUs).toFixed(2)}× (< 1: this tree takes less time)`,
    );
  }
}
