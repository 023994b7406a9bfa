import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { Webhook } from 'standardwebhooks';
import type { DispatcherOptions } from '../../src/delivery/dispatcher.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

export interface ReceivedRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
  json: any;
  /** When it arrived (Date.now()). */
  receivedAt: number;
}

/** Decides the answer to one request; the default answers 204. */
export type Responder = (req: ReceivedRequest, res: ServerResponse, index: number) => void | Promise<void>;

/** A real HTTP webhook receiver on a loopback port that records everything it is sent. */
export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  /** Per path: what to answer; requests to paths without a responder get 204. */
  respond(path: string, responder: Responder): void;
  forPath(path: string): ReceivedRequest[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const responders = new Map<string, Responder>();
  const counts = new Map<string, number>();
  const open = new Set<ServerResponse>();
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '/';
    let json: unknown = null;
    try {
      json = JSON.parse(body);
    } catch {
      /* recorded as text */
    }
    const received: ReceivedRequest = { path, headers: req.headers as Record<string, string>, body, json, receivedAt: Date.now() };
    requests.push(received);
    const index = counts.get(path) ?? 0;
    counts.set(path, index + 1);
    open.add(res);
    res.on('close', () => open.delete(res));
    const responder = responders.get(path);
    if (responder) await responder(received, res, index);
    else res.writeHead(204).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    respond: (path, responder) => responders.set(path, responder),
    forPath: (path) => requests.filter((r) => r.path === path),
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Verifies a received request with the standardwebhooks package, as a subscriber would. Throws if invalid. */
export function verify(secret: string, req: ReceivedRequest): any {
  return new Webhook(secret).verify(req.body, {
    'webhook-id': req.headers['webhook-id']!,
    'webhook-timestamp': req.headers['webhook-timestamp']!,
    'webhook-signature': req.headers['webhook-signature']!,
  });
}

/** Fast dispatcher settings for tests: short request timeout and lease, frequent polling. */
export const FAST_DISPATCHER: DispatcherOptions = { requestTimeoutMs: 1500, leaseMs: 3000, pollIntervalMs: 200 };

/** A real server (REST + dispatcher) on its own fresh database, with a compressed retry schedule. */
export async function startDeliveryServer(options: { dispatcher?: DispatcherOptions | false; env?: Record<string, string> } = {}): Promise<TestServer> {
  return startTestServer({ WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2', ...options.env }, { dispatcher: options.dispatcher ?? FAST_DISPATCHER });
}

export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const ROOT = resolve(import.meta.dirname, '../..');

/** Runs the real executable (`node bin/emergency-api.js ... --json`) and parses its JSON output. */
export async function runCli(databaseUrl: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; json: any; stderr: string }> {
  const child = spawn(process.execPath, ['bin/emergency-api.js', ...args, '--json'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
  let json: unknown = null;
  try {
    json = JSON.parse(stdout);
  } catch {
    /* left null */
  }
  return { code, json, stderr };
}

/** Starts `emergency-api worker` as a child process and resolves once it reports it is running. */
export async function spawnWorker(databaseUrl: string, args: string[] = []): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['bin/emergency-api.js', 'worker', ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: process.env.WORKER_LOG_LEVEL ?? 'silent',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
    if (process.env.WORKER_LOG_LEVEL) process.stderr.write(d);
  });
  await new Promise<void>((resolveReady, reject) => {
    child.stdout!.on('data', (d) => {
      stdout += d;
      if (stdout.includes('status: running')) resolveReady();
    });
    child.once('exit', (code) => reject(new Error(`worker exited early with ${code}: ${stderr}`)));
  });
  return child;
}

export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}
