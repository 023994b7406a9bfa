/**
 * `npm run bench`: every scenario of bench/scenarios.ts on SQLite and, when PostgreSQL is configured or
 * reachable, on PostgreSQL; prints one table and writes bench/results.json, bench/results.svg (the chart) and bench/results.md (the table in Markdown).
 *
 *   npm run bench                      BENCH_DURATION (default 6) seconds per measurement; ~18 minutes for both databases
 *   npm run bench -- --quick           2 s per measurement and smaller fan-outs: a smoke run of the whole suite
 *   npm run bench -- --only declare,mcp --db sqlite
 *
 * PostgreSQL: BENCH_POSTGRES_URL, else DATABASE_URL when it is postgres://..., else
 * postgres://postgres@127.0.0.1:5432/test when it answers. Every scenario gets a fresh schema (?schema=bench_...)
 * that is dropped afterwards, with any schema the scenario made for itself (bench_..._<its pid>).
 * Each scenario runs in its own process group with a time limit; its output goes to a log file whose tail is
 * printed when it fails.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { ROOT } from './lib/harness.js';
import { type Database, makeRow, renderMarkdown, renderSvg, renderTable, type Row, statusRow } from './lib/report.js';
import { dropSchemas } from './lib/support.js';
import { type RunOptions, type Scenario, scenarios } from './scenarios.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    db: { type: 'string' },
    duration: { type: 'string' },
  },
});
const quick = values.quick!;
const duration = Number(values.duration ?? process.env.BENCH_DURATION ?? (quick ? 2 : 6));
if (!Number.isFinite(duration) || duration <= 0) throw new Error('BENCH_DURATION / --duration must be a positive number of seconds');
const only = values.only?.split(',').map((s) => s.trim());
const unknown = only?.filter((id) => !scenarios.some((s) => s.id === id));
if (unknown?.length) throw new Error(`unknown scenario(s) ${unknown.join(', ')}; known: ${scenarios.map((s) => s.id).join(', ')}`);
const selected = scenarios.filter((s) => !only || only.includes(s.id));

const runDir = mkdtempSync(join(tmpdir(), 'emergency-bench-suite-'));
const runTag = `${process.pid}_${Date.now().toString(36)}`;
const started = Date.now();
const load = loadavg()[0]!.toFixed(2);

const postgres = await choosePostgres();
const databases = (values.db ?? 'sqlite,postgres').split(',').map((d) => d.trim()) as Database[];
if (databases.some((d) => d !== 'sqlite' && d !== 'postgres')) throw new Error('--db takes sqlite, postgres or both (comma-separated)');
console.log(`benchmark suite: ${selected.map((s) => s.id).join(', ')} on ${databases.join(' and ')}; ${duration} s per measurement${quick ? ' (quick)' : ''}`);
console.log(`machine: ${cpus().length} cores, load average ${load}; node ${process.version}; logs in ${runDir}`);
if (!postgres.url) console.log(`PostgreSQL: skipped (${postgres.note})`);

// Interrupted (Ctrl-C, a CI time limit): take the running scenario's process group down with us.
let current: { pid: number; schema: string | null } | null = null;
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, async () => {
    interrupted = true;
    console.log(`\n${signal}: stopping`);
    const running = current;
    if (running) {
      killGroup(running.pid, 'SIGTERM');
      await new Promise((r) => setTimeout(r, 2_000));
      killGroup(running.pid, 'SIGKILL');
      if (running.schema) await cleanUpSchemas(running.schema, running.pid);
    }
    rmSync(runDir, { recursive: true, force: true });
    process.exit(130);
  });
}

const rows: Row[] = [];
interface Run {
  scenario: string;
  database: Database;
  status: 'ok' | 'failed' | 'skipped';
  seconds: number;
  note?: string;
  raw?: unknown;
}
const runs: Run[] = [];
for (const database of databases) {
  if (database === 'postgres' && !postgres.url) {
    rows.push(statusRow('*', 'postgres', 'skipped', postgres.note));
    continue;
  }
  for (const scenario of selected) {
    const run: Run = await runScenario(scenario, { database, quick, duration });
    runs.push(run);
    if (run.status === 'skipped') rows.push(statusRow(scenario.id, database, 'skipped', run.note!));
    else if (run.status === 'failed') rows.push(statusRow(scenario.id, database, 'error', run.note!));
    else {
      try {
        for (const input of scenario.rows(run.raw, { database, quick, duration })) rows.push(makeRow(scenario.id, database, input));
      } catch (error) {
        run.status = 'failed';
        run.note = `unexpected results: ${(error as Error).message}`;
        rows.push(statusRow(scenario.id, database, 'error', run.note));
      }
    }
  }
}

const seconds = Math.round((Date.now() - started) / 1000);
const subtitle = `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC · ${cpus().length} cores (${cpus()[0]?.model.trim()}) · node ${process.version} · ${duration} s per measurement${quick ? ' (quick)' : ''} · load average ${load} at start`;
console.log(`\n${renderTable(rows)}\n`);
const counts = (status: Row['status']) => rows.filter((r) => r.status === status).length;
console.log(
  `${counts('pass')} pass, ${counts('fail')} fail, ${counts('n/a')} n/a, ${counts('error')} scenario errors, ${counts('skipped')} skipped; ${seconds} s in all`,
);

const resultsJson = join(ROOT, 'bench/results.json');
const resultsSvg = join(ROOT, 'bench/results.svg');
writeFileSync(
  resultsJson,
  `${JSON.stringify(
    {
      generatedAt: new Date().toISOString(),
      machine: { cores: cpus().length, cpu: cpus()[0]?.model.trim(), node: process.version, platform: process.platform, loadAverageAtStart: Number(load) },
      options: { quick, durationSeconds: duration, connections: Number(process.env.BENCH_CONNECTIONS ?? 50), databases, scenarios: selected.map((s) => s.id) },
      seconds,
      rows,
      runs,
    },
    null,
    2,
  )}\n`,
);
const resultsMd = join(ROOT, 'bench/results.md');
writeFileSync(resultsSvg, renderSvg(rows, subtitle));
writeFileSync(resultsMd, renderMarkdown(rows, subtitle));
console.log(`wrote ${resultsJson}, ${resultsSvg} and ${resultsMd}`);
rmSync(runDir, { recursive: true, force: true });
process.exitCode = counts('error') ? 1 : 0;

async function choosePostgres(): Promise<{ url: string | null; note: string }> {
  const configured = process.env.BENCH_POSTGRES_URL || (/^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '') ? process.env.DATABASE_URL! : '');
  const candidate = configured || 'postgres://postgres@127.0.0.1:5432/test';
  const url = new URL(candidate);
  url.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('select 1');
    return { url: url.toString(), note: '' };
  } catch (error) {
    const where = `${url.host}${url.pathname}`;
    return {
      url: null,
      note: configured ? `configured PostgreSQL at ${where} is not reachable: ${(error as Error).message}` : `no PostgreSQL configured and none at ${where}`,
    };
  } finally {
    await client.end().catch(() => {});
  }
}

async function runScenario(scenario: Scenario, o: RunOptions): Promise<Run> {
  const label = `${scenario.id} (${o.database === 'postgres' ? 'PostgreSQL' : 'SQLite'})`;
  const base = { scenario: scenario.id, database: o.database, seconds: 0 };
  if (scenario.databases && !scenario.databases.includes(o.database)) {
    const note = `measures ${scenario.databases.join(' and ')} only`;
    console.log(`- ${label}: skipped, ${note}`);
    return { ...base, status: 'skipped' as const, note };
  }
  if (!existsSync(join(ROOT, scenario.file))) {
    const note = `${scenario.file} is not in this tree`;
    console.log(`- ${label}: skipped, ${note}`);
    return { ...base, status: 'skipped' as const, note };
  }
  const dir = join(runDir, `${o.database}-${scenario.id.replace(/\W/g, '_')}`);
  mkdirSync(dir, { recursive: true });
  const jsonPath = join(dir, 'result.json');
  const logPath = join(dir, 'output.log');
  const schema = `bench_${scenario.id.replace(/\W/g, '_')}_${runTag}`.toLowerCase().slice(0, 63);
  const env: Record<string, string | undefined> = {
    ...process.env,
    BENCH_JSON: jsonPath,
    BENCH_DURATION: String(o.duration),
    // Scenarios measure throughput, not the per-key limiter: lift it for every server they start.
    RATE_LIMIT_PER_KEY: '1000000',
    // Temporary files (SQLite databases, attachment stores) land here and go with it even after a crash.
    TMPDIR: dir,
    ...scenario.env?.(o),
  };
  if (o.database === 'sqlite') {
    delete env.DATABASE_URL;
    delete env.BENCH_DATABASE_URL;
  } else {
    const url = new URL(postgres.url!);
    url.searchParams.set('schema', schema);
    env.DATABASE_URL = url.toString();
    env.BENCH_DATABASE_URL = postgres.url!; // bench/mcp.ts adds a schema of its own to this one
  }

  process.stdout.write(`- ${label}: running… `);
  const t0 = Date.now();
  const log = createWriteStream(logPath);
  let stdout = '';
  // Through bash to raise the descriptor limit (the device scenario opens thousands of sockets); `exec`
  // keeps the pid, which names the schemas the scenario makes for itself. Its own process group lets a
  // timeout or a crash take its servers down with it.
  const child = spawn(
    '/bin/bash',
    [
      '-c',
      'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"',
      'bash',
      process.execPath,
      '--import',
      'tsx',
      join(ROOT, scenario.file),
      ...(scenario.args?.(o) ?? []),
    ],
    {
      cwd: ROOT,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  current = { pid: child.pid!, schema: o.database === 'postgres' ? schema : null };
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    log.write(chunk);
  });
  child.stderr.on('data', (chunk: Buffer) => log.write(chunk));
  let timedOut = false;
  const limit = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid!, 'SIGTERM');
    setTimeout(() => killGroup(child.pid!, 'SIGKILL'), 5_000).unref();
  }, scenario.timeoutSeconds(o) * 1000);
  const exitCode = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  clearTimeout(limit);
  if (interrupted) await new Promise(() => {}); // the signal handler cleans up and exits
  current = null;
  killGroup(child.pid!, 'SIGKILL'); // servers a crashed scenario left behind
  await new Promise((resolve) => log.end(resolve));
  const seconds = Math.round((Date.now() - t0) / 1000);

  if (o.database === 'postgres') await cleanUpSchemas(schema, child.pid!);

  let raw: unknown;
  let problem = timedOut ? `timed out after ${scenario.timeoutSeconds(o)} s` : exitCode !== 0 ? `exit code ${exitCode}` : '';
  if (!problem) {
    try {
      raw = readResults(scenario, jsonPath, stdout);
    } catch (error) {
      problem = (error as Error).message;
    }
  }
  if (problem) {
    console.log(`FAILED after ${seconds} s (${problem})`);
    const tail = readFileSync(logPath, 'utf8').trimEnd().split('\n').slice(-15);
    for (const line of tail) console.log(`    | ${line}`);
    return { ...base, seconds, status: 'failed' as const, note: problem };
  }
  console.log(`done in ${seconds} s`);
  return { ...base, seconds, status: 'ok' as const, raw };
}

function readResults(scenario: Scenario, jsonPath: string, stdout: string): unknown {
  if (scenario.output === 'bench-json' && existsSync(jsonPath)) return JSON.parse(readFileSync(jsonPath, 'utf8'));
  if (scenario.output === 'stdout-json') {
    // The document is the last thing printed; it starts on a line of its own.
    const start = stdout.lastIndexOf('\n{') + 1;
    try {
      return JSON.parse(stdout.slice(start));
    } catch {
      throw new Error('no JSON document on its output');
    }
  }
  if (scenario.parseStdout) {
    const parsed = scenario.parseStdout(stdout);
    if (Array.isArray(parsed) && parsed.length === 0) throw new Error('no results in its output');
    return parsed;
  }
  throw new Error('it wrote no BENCH_JSON file');
}

function killGroup(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}

/** Drops the schema given to the scenario and those it made itself, named bench_..._<its pid> by convention. */
async function cleanUpSchemas(given: string, pid: number) {
  const client = new pg.Client({ connectionString: postgres.url! });
  try {
    await client.connect();
    const own = await client.query<{ name: string }>(
      `select schema_name as name from information_schema.schemata where schema_name like 'bench\\_%' and schema_name like '%\\_' || $1::text`,
      [String(pid)],
    );
    await client.end();
    await dropSchemas(postgres.url!, [given, ...own.rows.map((r) => r.name)]);
  } catch (error) {
    await client.end().catch(() => {});
    console.log(`  (could not drop benchmark schemas: ${(error as Error).message})`);
  }
}
