import type { IncomingMessage } from 'node:http';
import { after, before } from 'node:test';
import WebSocket from 'ws';
import { loadConfig } from '../../src/config.js';
import type { DeviceGatewayOptions } from '../../src/devices/gateway.js';
import type { EventLogOptions } from '../../src/log/follow.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { freshDatabaseUrl, onPostgres } from '../helpers/db.js';
import { TEST_ENV } from '../helpers/server.js';

export interface DeviceTestServer extends RunningServer {
  base: string;
  wsUrl: string;
  databaseUrl: string;
  dialect: 'sqlite' | 'postgres';
  close(): Promise<void>;
}

/**
 * A real server (like startTestServer) whose gateway timings can be shortened. Pass `databaseUrl` of
 * another test server to run a second instance on the same database.
 */
export async function startDeviceServer(
  options: { devices?: Partial<DeviceGatewayOptions>; eventLog?: Partial<EventLogOptions>; databaseUrl?: string; port?: number } = {},
): Promise<DeviceTestServer> {
  const fresh = options.databaseUrl ? null : freshDatabaseUrl();
  const databaseUrl = options.databaseUrl ?? fresh!.url;
  const config = loadConfig({ ...TEST_ENV, PORT: String(options.port ?? 0), DATABASE_URL: databaseUrl });
  const server = await startServer(config, undefined, { devices: options.devices, eventLog: options.eventLog });
  return {
    ...server,
    base: `${server.url}/api/public/v1`,
    wsUrl: `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`,
    databaseUrl,
    dialect: databaseUrl.startsWith('sqlite:') ? 'sqlite' : 'postgres',
    async close() {
      await server.stop();
      await fresh?.drop();
    },
  };
}

export interface EventFrame {
  type: 'event';
  offset: number;
  event: { eventId: string; eventType: string; orgId: string; emergencyId: string; sequence: number; data: { emergency: Record<string, any> } };
}

/** A real WebSocket device client that records every frame it receives. */
export class TestDevice {
  readonly frames: any[] = [];
  readonly events: EventFrame[] = [];
  closeCode: number | null = null;
  closeReason = '';
  private waiters: (() => void)[] = [];
  readonly closed: Promise<void>;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      this.frames.push(frame);
      if (frame.type === 'event') this.events.push(frame);
      this.notify();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason.toString();
        this.notify();
        resolve();
      }),
    );
    ws.on('error', () => undefined);
  }

  private notify() {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Waits until `predicate` holds, failing after `timeoutMs`. */
  async until(predicate: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (received ${this.events.length} events, close ${this.closeCode})`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  offsets(): number[] {
    return this.events.map((e) => e.offset);
  }

  send(frame: unknown) {
    this.ws.send(JSON.stringify(frame));
  }

  async close() {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close();
    await this.closed;
  }
}

export function connectDevice(wsUrl: string, token: string, options: { after?: number; autoPong?: boolean } = {}): Promise<TestDevice> {
  const url = new URL(wsUrl);
  if (options.after !== undefined) url.searchParams.set('after', String(options.after));
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, autoPong: options.autoPong ?? true });
  const device = new TestDevice(ws);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(device));
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      reject(new Error(`upgrade refused with ${res.statusCode}`));
    });
    ws.once('error', reject);
  });
}

/** Attempts an upgrade that should be refused; returns the HTTP response. */
export function refusedUpgrade(
  wsUrl: string,
  headers: Record<string, string>,
  query = '',
): Promise<{ status: number; headers: IncomingMessage['headers']; body: any }> {
  const ws = new WebSocket(`${wsUrl}${query}`, { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : null }));
    });
    ws.once('error', () => undefined);
  });
}

/** Runs `count` calls of `fn` with at most `concurrency` in flight. */
export async function runConcurrently(count: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

/** The option of a suite of several instances on one database: it runs on PostgreSQL only. */
export const SEVERAL_INSTANCES = {
  skip: onPostgres ? false : 'needs PostgreSQL: set DATABASE_URL=postgres://... (SQLite serves one instance per database)',
};

/** Two instances of the service on one database for the tests of the calling suite: started before them, stopped after. */
export function twoInstances(options: Omit<Parameters<typeof startDeviceServer>[0], 'databaseUrl'> = {}): { a: DeviceTestServer; b: DeviceTestServer } {
  const pair = {} as { a: DeviceTestServer; b: DeviceTestServer };
  before(async () => {
    pair.a = await startDeviceServer(options);
    pair.b = await startDeviceServer({ ...options, databaseUrl: pair.a.databaseUrl });
  });
  after(async () => {
    await pair.b?.stop();
    await pair.a?.close();
  });
  return pair;
}
