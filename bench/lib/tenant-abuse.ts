/**
 * The load a hostile tenant puts on the service in the fair-share benchmark (bench/fairness.ts): only requests the
 * service allows, driven from the benchmark's process. Each abuse runs until stopped and counts its answers by status.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { monotonicMs } from './device-swarm.js';
import { percentiles } from './tenant-probe.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface AbuseSummary {
  /** Requests (or connections) made. */
  rounds: number;
  /** Their outcomes by status (-1: the connection failed, 0: no answer in time). */
  statuses: Record<string, number>;
}

/** A type, not an interface, so that an abuse with details of its own still passes for one. */
export type Abuse = { stop(): Promise<AbuseSummary> };

/**
 * Runs `step` in `concurrency` loops until stopped; with `perSecond`, the steps start at that rate overall (a loop
 * that falls behind starts its next step at once). With `honourRetryAfter`, a loop refused (429, 503 or a connection
 * closed on its body) pauses a second, as the answer's Retry-After asks, before its next step.
 */
export function abuseLoop(step: (i: number) => Promise<number>, options: { concurrency: number; perSecond?: number; honourRetryAfter?: boolean }): Abuse {
  let running = true;
  let next = 0;
  const statuses: Record<string, number> = {};
  const started = monotonicMs();
  const loops = Array.from({ length: options.concurrency }, async () => {
    while (running) {
      const i = next++;
      if (options.perSecond) {
        const wait = started + (i * 1000) / options.perSecond - monotonicMs();
        if (wait > 0) await sleep(wait);
        if (!running) break;
      }
      const status = await step(i).catch(() => -1);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (options.honourRetryAfter && (status === 429 || status === 503 || status === -1)) await sleep(1000);
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return { rounds: Object.values(statuses).reduce((a, b) => a + b, 0), statuses };
    },
  };
}

/** One request with `fetch`, its answer read whole; the status, or 0 past `timeoutMs`. */
export async function fetchStatus(url: string, init: RequestInit, timeoutMs = 30_000): Promise<number> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.status;
  } catch (error) {
    return (error as Error).name === 'TimeoutError' ? 0 : -1;
  }
}

/** A POST of a body given in parts (a large shared tail is written as it is, never copied), on a connection of its own. */
export function postParts(url: string, headers: Record<string, string>, parts: Buffer[]): Promise<number> {
  const length = parts.reduce((n, p) => n + p.length, 0);
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', agent: false, headers: { ...headers, 'content-length': length } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? -1));
      res.on('error', () => resolve(res.statusCode ?? -1));
    });
    // A refused post is answered before its body is read and the connection closed: the write then fails.
    req.on('error', () => resolve(-1));
    for (const part of parts) req.write(part);
    req.end();
  });
}

/** A bearer key of the right shape that no key matches. */
export const unknownKey = (): string => `enk_live_${randomBytes(36).toString('hex')}`;

export interface DeviceSocket {
  /** 101 when the upgrade was accepted, else the answer's status (-1: connection failed, 0: no answer in time). */
  status: number;
  ms: number;
  close(): void;
}

/**
 * A base station's WebSocket upgrade on a bare socket: once accepted, it reads and drops every frame (it never
 * acknowledges and never answers a ping, which the service tolerates for its silence timeout, longer than any phase).
 */
export function openDeviceSocket(port: number, token: string, timeoutMs = 10_000): Promise<DeviceSocket> {
  const t0 = monotonicMs();
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let head = '';
    let done = false;
    const finish = (status: number) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (status !== 101) socket.destroy();
      resolve({ status, ms: monotonicMs() - t0, close: () => socket.destroy() });
    };
    const timer = setTimeout(() => finish(0), timeoutMs);
    socket.on('error', () => finish(-1));
    socket.on('close', () => finish(-1));
    socket.on('connect', () => {
      socket.write(
        [
          'GET /devices/v1/stream HTTP/1.1',
          `host: 127.0.0.1:${port}`,
          'upgrade: websocket',
          'connection: Upgrade',
          `sec-websocket-key: ${randomBytes(16).toString('base64')}`,
          'sec-websocket-version: 13',
          `authorization: Bearer ${token}`,
          '',
          '',
        ].join('\r\n'),
      );
    });
    socket.on('data', (chunk: Buffer) => {
      if (done) return;
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n');
      if (end >= 0) finish(Number(head.slice(9, 12)) || -1);
    });
  });
}

/** Opens `tokens` as device sockets, `batch` upgrades at a time; the accepted ones stay open until `close`. */
export async function holdDeviceSockets(port: number, tokens: string[], batch = 50) {
  const sockets: DeviceSocket[] = [];
  for (let i = 0; i < tokens.length; i += batch) {
    sockets.push(...(await Promise.all(tokens.slice(i, i + batch).map((token) => openDeviceSocket(port, token)))));
  }
  const statuses: Record<string, number> = {};
  for (const s of sockets) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
  return {
    accepted: sockets.filter((s) => s.status === 101).length,
    statuses,
    close: () => {
      for (const s of sockets) s.close();
    },
  };
}

/** An event stream (SSE) of `url` on a connection of its own: its answer's status, and the way to close it. */
export function openStream(url: string, key: string, timeoutMs = 10_000): Promise<{ status: number; close(): void }> {
  return new Promise((resolve) => {
    const req = request(url, { agent: false, headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } }, (res) => {
      clearTimeout(timer);
      res.on('data', () => {});
      res.on('error', () => {});
      if (res.statusCode !== 200) req.destroy();
      resolve({ status: res.statusCode ?? -1, close: () => req.destroy() });
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve({ status: 0, close: () => {} });
    }, timeoutMs);
    req.on('error', () => {
      clearTimeout(timer);
      resolve({ status: -1, close: () => {} });
    });
    req.end();
  });
}

/** `perKey` event streams of `url` for each of `keys`, `batch` at a time; the admitted ones stay open until `close`. */
export async function holdStreams(url: string, keys: string[], perKey: number, batch = 50) {
  const attempts = keys.flatMap((key) => Array.from({ length: perKey }, () => key));
  const streams: Awaited<ReturnType<typeof openStream>>[] = [];
  for (let i = 0; i < attempts.length; i += batch) streams.push(...(await Promise.all(attempts.slice(i, i + batch).map((key) => openStream(url, key)))));
  const statuses: Record<string, number> = {};
  for (const s of streams) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
  return {
    accepted: streams.filter((s) => s.status === 200).length,
    statuses,
    close: () => {
      for (const s of streams) s.close();
    },
  };
}

/** Whether each of `tokens`, base stations never seen before, gets its upgrade accepted, one after another. */
export async function connectFresh(port: number, tokens: string[]) {
  const times: number[] = [];
  const statuses: Record<string, number> = {};
  for (const token of tokens) {
    const socket = await openDeviceSocket(port, token);
    socket.close();
    statuses[socket.status] = (statuses[socket.status] ?? 0) + 1;
    if (socket.status === 101) times.push(socket.ms);
  }
  return { attempts: tokens.length, accepted: times.length, statuses, ...percentiles(times) };
}

/**
 * `count` unauthenticated sockets from `localAddress`, a third each idle, trickling a request's headers a byte every
 * two seconds, and stopping an upgrade's headers short of their end. Whatever the server closes is opened again
 * `reopenMs` later, as a patient attacker would.
 */
export function slowSockets(port: number, count: number, localAddress: string, reopenMs = 5_000) {
  let running = true;
  const open = new Set<Socket>();
  let opened = 0;
  let closedByServer = 0;
  const start = (kind: number) => {
    if (!running) return;
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    opened++;
    open.add(socket);
    let trickle: NodeJS.Timeout | undefined;
    socket.on('error', () => {});
    socket.on('data', () => {});
    socket.on('connect', () => {
      if (kind === 1) {
        socket.write(`GET /healthz HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n`);
        let n = 0;
        trickle = setInterval(() => socket.write('x-trickle: 1\r\n'[n++ % 14]!), 2_000);
      } else if (kind === 2) {
        socket.write(
          `GET /devices/v1/stream HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-version: 13\r\n`,
        );
      }
    });
    socket.on('close', () => {
      clearInterval(trickle);
      open.delete(socket);
      if (!running) return;
      closedByServer++;
      setTimeout(() => start(kind), reopenMs);
    });
  };
  for (let i = 0; i < count; i++) start(i % 3);
  return {
    async stop(): Promise<AbuseSummary> {
      running = false;
      for (const socket of open) socket.destroy();
      return { rounds: opened, statuses: { closedByServer } };
    },
  };
}

/** Polls `url` on a new connection every `everyMs`: how many answered 200 within `timeoutMs`, and how fast. */
export function healthWatch(url: string, everyMs = 200, timeoutMs = 2_000) {
  let running = true;
  const times: number[] = [];
  let attempts = 0;
  const once = () =>
    new Promise<void>((resolve) => {
      const t0 = monotonicMs();
      const req = request(url, { agent: false, timeout: timeoutMs }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) times.push(monotonicMs() - t0);
          resolve();
        });
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve());
      req.end();
    });
  const loop = (async () => {
    while (running) {
      attempts++;
      await Promise.all([once(), sleep(everyMs)]);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { attempts, ok: times.length, ...percentiles(times) };
    },
  };
}
