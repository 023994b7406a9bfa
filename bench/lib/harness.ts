import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';

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

export async function load(name: string, options: autocannon.Options): Promise<Result> {
  // A short warm-up lets V8 optimize and SQLite fill its page cache before measuring.
  await autocannon({ ...options, duration: 2, connections: CONNECTIONS });
  const r = await autocannon({ connections: CONNECTIONS, duration: DURATION, ...options });
  return {
    name,
    requestsPerSec: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  };
}

export function printTable(rows: Result[], ratios: [string, string, string][]): void {
  const byName = new Map(rows.map((r) => [r.name, r]));
  console.log(`\n${'scenario'.padEnd(34)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'errors'.padStart(7)} ${'non2xx'.padStart(7)}`);
  for (const r of rows) {
    console.log(`${r.name.padEnd(34)} ${String(r.requestsPerSec).padStart(9)} ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)} ${String(r.errors).padStart(7)} ${String(r.non2xx).padStart(7)}`);
  }
  console.log('');
  for (const [label, a, b] of ratios) {
    const x = byName.get(a);
    const y = byName.get(b);
    if (x && y) console.log(`${label.padEnd(50)} ${(x.requestsPerSec / y.requestsPerSec).toFixed(2)}x`);
  }
}
