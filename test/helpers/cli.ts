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
