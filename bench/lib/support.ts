import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import pg from 'pg';

export interface BenchDatabase {
  url: string;
  dialect: 'sqlite' | 'postgres';
  /** A temporary directory for this run (SQLite file, attachment store); removed by `drop`. */
  dir: string;
  drop(): Promise<void>;
}

/**
 * A throwaway database for one benchmark: a SQLite file in a temporary directory, or, when DATABASE_URL
 * is PostgreSQL, a schema of its own (the one named by `?schema=` if the caller chose it, else a new one),
 * so benchmarks never write into a schema that holds real data. `drop` removes both.
 */
export function benchDatabase(tag: string): BenchDatabase {
  const dir = mkdtempSync(join(tmpdir(), `emergency-bench-${tag}-`));
  const base = process.env.DATABASE_URL;
  if (!base || !/^postgres(ql)?:\/\//.test(base)) {
    return { url: `sqlite:${join(dir, 'bench.db')}`, dialect: 'sqlite', dir, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const url = new URL(base);
  const schema = url.searchParams.get('schema') ?? `bench_${tag}_${process.pid}`;
  url.searchParams.set('schema', schema);
  return {
    url: url.toString(),
    dialect: 'postgres',
    dir,
    async drop() {
      rmSync(dir, { recursive: true, force: true });
      await dropSchemas(base, [schema]);
    },
  };
}

/** Drops the named schemas (and everything in them); names are checked because they are spliced into SQL. */
export async function dropSchemas(connectionString: string, schemas: string[]): Promise<void> {
  const url = new URL(connectionString);
  url.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    for (const schema of schemas) {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`refusing to drop schema ${JSON.stringify(schema)}`);
      await client.query(`drop schema if exists ${schema} cascade`);
    }
  } finally {
    await client.end();
  }
}

/** Resident set size of a process in bytes (Linux /proc). */
export function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) * 1024;
}

/** Writes a benchmark's raw results to the file named by BENCH_JSON, when set (the suite runner reads it). */
export function writeBenchJson(result: unknown): void {
  const path = process.env.BENCH_JSON;
  if (path) writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`);
}

/** A TCP port that was free a moment ago (benchmarks may run next to other servers on this machine). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * autocannon options that send `template` with `{n}` replaced by a per-request counter, so every request
 * is distinct. (autocannon's own `idReplacement` assumes a fixed id length when it sets Content-Length and
 * hangs when the id is shorter; building each request lets it measure the real body.)
 */
export function numberedBodies(template: string): Pick<autocannon.Options, 'requests'> {
  const [head, tail = ''] = template.split('{n}');
  let n = 0;
  return { requests: [{ setupRequest: (request) => ({ ...request, body: `${head}${n++}${tail}` }) }] };
}

/** The environment of a `serve` child on the bench database: loopback, quiet, no rate limit in the way. */
export function benchServerEnv(db: BenchDatabase, port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: db.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_KEY: '1000000',
    ATTACHMENT_STORE: `file:${join(db.dir, 'attachments')}`,
    ...extra,
  };
}
