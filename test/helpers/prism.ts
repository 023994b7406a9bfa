import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { freePort } from './child-server.js';

const PRISM = resolve(import.meta.dirname, '../../node_modules/.bin/prism');

export interface PrismProxy {
  /** Where to send requests: Prism's origin, paths as the document writes them. */
  url: string;
  /** Everything Prism wrote, for the message of a failed assertion. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Stoplight Prism as a validating proxy: every request is checked against `document` and forwarded to
 * `upstream`, every answer is checked against the operation's responses. With `--errors` an answer that
 * breaks the document is replaced by Prism's own 500 problem+json, and any violation is listed in the
 * `sl-violations` header.
 */
export async function startPrismProxy(document: string, upstream: string): Promise<PrismProxy> {
  const port = await freePort();
  const child: ChildProcess = spawn(PRISM, ['proxy', document, upstream, '--errors', '--host', '127.0.0.1', '--port', String(port), '-v', 'warn'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (log += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (log += d));
  const url = `http://127.0.0.1:${port}`;
  // Prism logs nothing when it listens at this verbosity: it is ready once it answers.
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prism exited with ${child.exitCode}:\n${log}`);
    const ready = await fetch(`${url}/`, { method: 'OPTIONS' }).then(
      () => true,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) throw new Error(`prism did not listen within 30 s:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    output: () => log,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}
