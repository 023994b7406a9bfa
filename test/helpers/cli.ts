import { execFile } from 'node:child_process';
import { resolve } from 'node:path';

const BIN = resolve(import.meta.dirname, '../../bin/emergency-api.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

/**
 * Runs the real `emergency-api` executable as an operator would, against the given database (or server: EMERGENCY_API_URL
 * and EMERGENCY_API_ADMIN_KEY, unset unless given). A variable given as undefined is unset; `cwd` is where it runs.
 */
export function runCli(args: string[], env: Record<string, string | undefined>, options: { cwd?: string } = {}): Promise<CliResult> {
  const childEnv = {
    ...process.env,
    LOG_LEVEL: 'silent',
    EMERGENCY_API_URL: undefined,
    EMERGENCY_API_ADMIN_KEY: undefined,
    EMERGENCY_API_ADMIN_KEY_FILE: undefined,
    ...env,
  };
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { env: childEnv, cwd: options.cwd, timeout: 60_000 }, (error, stdout, stderr) => {
      let json: unknown = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        /* not JSON */
      }
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      done({ code, stdout, stderr, json });
    });
  });
}

/**
 * The two ways an admin command runs against a test server, by name: on its database (as the operator) and over its admin
 * API with an admin key. Read when a test runs, once the server has started.
 */
export function adminCliModes(target: () => { databaseUrl: string; url: string; adminKey: string }): Record<string, () => Record<string, string | undefined>> {
  return {
    database: () => ({ DATABASE_URL: target().databaseUrl }),
    'admin API': () => ({ DATABASE_URL: undefined, EMERGENCY_API_URL: target().url, EMERGENCY_API_ADMIN_KEY: target().adminKey }),
  };
}

/** The CLI with `--json`, in `cwd` with `env`: each call must succeed, and answers its JSON. */
export function jsonCli(env: Record<string, string | undefined>, cwd: string) {
  return async (...args: string[]) => {
    const res = await runCli([...args, '--json'], env, { cwd });
    if (res.code !== 0) throw new Error(`${args.join(' ')} exited ${res.code}: ${res.stderr}`);
    return res.json;
  };
}
