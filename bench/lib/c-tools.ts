/**
 * The benchmark's measuring tools written in C (bench/lib/*.c), compiled with the machine's C compiler
 * (`CC`, default `cc`) on first use. The binaries live in the temp directory, one per source version.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function compiledTool(sourceName: string): string {
  const source = fileURLToPath(new URL(`./${sourceName}`, import.meta.url));
  const version = createHash('sha256').update(readFileSync(source)).digest('hex').slice(0, 12);
  const dir = join(tmpdir(), 'emergency-api-bench');
  mkdirSync(dir, { recursive: true });
  const binary = join(dir, `${sourceName.replace(/\.c$/, '')}-${version}`);
  if (existsSync(binary)) return binary;
  const cc = process.env.CC ?? 'cc';
  // Built under a private name and renamed, so a concurrent run never starts a half-written binary.
  const building = `${binary}.${process.pid}`;
  const result = spawnSync(cc, ['-O2', '-Wall', '-pthread', '-o', building, source], { stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`could not compile ${source} with ${cc} (set CC to a C compiler)`);
  renameSync(building, binary);
  return binary;
}
