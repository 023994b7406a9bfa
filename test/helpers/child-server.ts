import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';

const BIN = resolve(import.meta.dirname, '../../bin/emergency-api.js');

export interface ChildServer {
  url: string;
  /** Every log line the server wrote on stdout, parsed ({raw} when not JSON). */
  lines: any[];
  child: ChildProcess;
  kill(): Promise<void>;
}

/** `emergency-api serve` (with `args`, e.g. ['--role', 'gateway']) as a child process on a random port, its JSON log lines collected. */
export async function spawnServer(env: Record<string, string>, args: string[] = []): Promise<ChildServer> {
  const lines: any[] = [];
  const child = spawn(process.execPath, [BIN, 'serve', ...args], {
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_PER_KEY: '1000', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        lines.push(JSON.parse(line));
      } catch {
        lines.push({ raw: line });
      }
    }
  });
  let url = '';
  const deadline = Date.now() + 30_000;
  while (!url && Date.now() < deadline && child.exitCode === null) {
    // A JSON line, or a pretty-printed one (LOG_FORMAT=pretty).
    const listening = lines.map((l) => /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(typeof l.msg === 'string' ? l.msg : (l.raw ?? ''))).find(Boolean);
    if (listening) url = listening[1]!;
    else await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(url, 'server started');
  return {
    url,
    lines,
    child,
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

/** A loopback port free right now. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
  const port = (probe.address() as { port: number }).port;
  await new Promise((r) => probe.close(r));
  return port;
}
