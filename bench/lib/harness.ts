import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { ratioText } from './report.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const BIN = join(ROOT, 'bin/emergency-api.js');
export const DURATION = Number(process.env.BENCH_DURATION ?? 10);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

export interface Result {
  name: string;
  requestsPerSec: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** Server CPU time (user + system, all threads) per completed request, in microseconds. */
  cpuUsPerRequest?: number;
}

export async function waitForHttp(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.status < 500) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

/** Starts a process and resolves once `readyUrl` answers; the process is killed at exit. */
export async function startProcess(args: string[], env: Record<string, string>, readyUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  process.on('exit', () => child.kill('SIGKILL'));
  await waitForHttp(readyUrl);
  return child;
}

export function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null) return done();
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
}

export function tempSqliteUrl(): string {
  return `sqlite:${join(mkdtempSync(join(tmpdir(), 'emergency-bench-')), 'bench.db')}`;
}

export function cli(args: string[], env: Record<string, string>): any {
  return JSON.parse(execFileSync(process.execPath, [BIN, ...args, '--json'], { env: { ...process.env, ...env }, encoding: 'utf8' }));
}

/**
 * CPU time (user + system, ms) a child process has used so far, all its threads included. On a
 * shared, noisy machine the cost per request is far steadier than requests per second.
 */
export function processCpuMs(child: ChildProcess): number {
  return pidCpuMs(child.pid!);
}

/** CPU time (user + system) a process has used so far, in ms (Linux /proc). */
export function pidCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in USER_HZ (100)
}

/** Loads `options.url`; with `server`, also reports that process's CPU time per request. */
export async function load(name: string, options: autocannon.Options, server?: ChildProcess): Promise<Result> {
  // A short warm-up lets V8 optimize and SQLite fill its page cache before measuring (with the connections the
  // measurement uses: a slow route warmed up at 50 would still be answering those requests when the measurement starts).
  await autocannon({ ...options, duration: 2, connections: options.connections ?? CONNECTIONS });
  const cpuBefore = server ? processCpuMs(server) : 0;
  const r = await autocannon({ connections: CONNECTIONS, duration: DURATION, ...options });
  const cpuMs = server ? processCpuMs(server) - cpuBefore : 0;
  return {
    name,
    requestsPerSec: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    ...(server && r.requests.total > 0 ? { cpuUsPerRequest: Math.round((cpuMs * 1000) / r.requests.total) } : {}),
  };
}

/** Throughput ratios by label (service / baseline requests per second). */
export function ratiosOf(rows: Result[], ratios: [string, string, string][]): Record<string, number> {
  const byName = new Map(rows.map((r) => [r.name, r]));
  const out: Record<string, number> = {};
  for (const [label, a, b] of ratios) {
    const x = byName.get(a);
    const y = byName.get(b);
    if (x && y && y.requestsPerSec > 0) out[label] = Number(ratioText(x.requestsPerSec / y.requestsPerSec));
  }
  return out;
}

/**
 * The same ratios estimated from server CPU time per request (baseline CPU / service CPU): what the
 * throughput ratio would be on an otherwise idle core, whatever else the machine is running.
 */
export function cpuRatiosOf(rows: Result[], ratios: [string, string, string][]): Record<string, number> {
  const byName = new Map(rows.map((r) => [r.name, r]));
  const out: Record<string, number> = {};
  for (const [label, a, b] of ratios) {
    const x = byName.get(a)?.cpuUsPerRequest;
    const y = byName.get(b)?.cpuUsPerRequest;
    if (x && y) out[label] = Number(ratioText(y / x));
  }
  return out;
}

/** Writes `{results, ratios, cpuRatios}` as JSON to `path` (the benchmark aggregator reads it). */
export function writeJson(path: string | undefined, rows: Result[], ratios: [string, string, string][]): void {
  if (!path) return;
  writeFileSync(path, `${JSON.stringify({ results: rows, ratios: ratiosOf(rows, ratios), cpuRatios: cpuRatiosOf(rows, ratios) }, null, 2)}\n`);
}

export function printTable(rows: Result[], ratios: [string, string, string][]): void {
  const byName = new Map(rows.map((r) => [r.name, r]));
  const width = Math.max(34, ...rows.map((r) => r.name.length));
  console.log(
    `\n${'scenario'.padEnd(width)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'errors'.padStart(7)} ${'non2xx'.padStart(7)}`,
  );
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(width)} ${String(r.requestsPerSec).padStart(9)} ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)} ${String(r.errors).padStart(7)} ${String(r.non2xx).padStart(7)}`,
    );
  }
  console.log('');
  for (const [label, a, b] of ratios) {
    const x = byName.get(a);
    const y = byName.get(b);
    if (x && y) console.log(`${label.padEnd(50)} ${ratioText(x.requestsPerSec / y.requestsPerSec)}x`);
  }
  const cpu = rows.filter((r) => r.cpuUsPerRequest !== undefined);
  if (cpu.length === 0) return;
  console.log('\nserver CPU per request (µs):');
  for (const r of cpu) console.log(`  ${r.name.padEnd(width)} ${String(r.cpuUsPerRequest).padStart(7)}`);
  for (const [label, value] of Object.entries(cpuRatiosOf(rows, ratios))) console.log(`${`${label} (by CPU)`.padEnd(50)} ${ratioText(value)}x`);
}
