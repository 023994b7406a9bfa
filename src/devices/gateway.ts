import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import type { AppContext } from '../context.js';
import { markConnected, markDisconnected, recordAcks, revokedSince, touchLastSeen, type AckUpdate } from '../domain/devices/repo.js';
import type { AuthenticatedDevice } from '../domain/devices/schema.js';
import { authenticateDevice } from '../domain/devices/service.js';
import { bearerToken } from '../edge/auth.js';
import { DeviceConnection } from './connection.js';
import { SocketFanOut } from './fan-out.js';
import { committedOffset, committedOffsets } from './event-reader.js';
import { OrgStream } from './org-stream.js';
import { CloseCode, DEVICE_STREAM_PATH, parseAfter, parseDeviceFrame } from './protocol.js';

export interface DeviceGatewayOptions {
  /** `{"type":"ping"}` (and a WebSocket ping) to every device at this interval. */
  pingIntervalMs: number;
  /** A device heard from neither frame nor pong for this long is dropped. */
  silenceTimeoutMs: number;
  /** How often open sockets of revoked devices are looked for. */
  revocationCheckMs: number;
  /** Backstop for lost wake-ups: compare each org's committed offset with what was read. */
  pollIntervalMs: number;
  /** Acknowledged offsets are written in batches at this interval. */
  ackFlushMs: number;
  /** Per-device send buffer bound; a live device above it is disconnected (close 4429). */
  maxBufferedBytes: number;
  /** Largest frame a device may send. */
  maxDeviceFrameBytes: number;
  /** Connections per instance; more are refused with 503 before the upgrade. */
  maxConnections: number;
  pageSize: number;
  closeGraceMs: number;
  /**
   * Helper threads that write live frames beside the event loop (see SocketFanOut); 0 writes them on
   * the event loop alone. Default: one on a machine with more than one core.
   */
  fanOutThreads: number;
  /** Live frames for fewer devices of an org than this are written on the event loop alone. */
  parallelFanOutMin: number;
}

export const defaultGatewayOptions: DeviceGatewayOptions = {
  pingIntervalMs: 25_000,
  silenceTimeoutMs: 60_000,
  revocationCheckMs: 2_000,
  pollIntervalMs: 2_000,
  ackFlushMs: 1_000,
  maxBufferedBytes: 1024 * 1024,
  maxDeviceFrameBytes: 4 * 1024,
  maxConnections: 100_000,
  pageSize: 500,
  closeGraceMs: 2_000,
  fanOutThreads: availableParallelism() > 1 ? 1 : 0,
  parallelFanOutMin: 64,
};

export interface DeviceGateway {
  stop(): Promise<void>;
  stats(): { connections: number; orgs: number };
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 503: 'Service Unavailable' };

/** Answers an upgrade request with a plain HTTP error, before any WebSocket is created. */
function refuseUpgrade(socket: Duplex, status: number, error: string, message: string, requestId: string): void {
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify({ detail: { error, message } });
  const headers = [
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
    ...(status === 401 ? ['WWW-Authenticate: Bearer'] : []),
  ];
  socket.end(`${headers.join('\r\n')}\r\n\r\n${body}`);
}

/**
 * The device gateway: authenticates WebSocket upgrades on /devices/v1/stream, replays and streams
 * each org's committed events to its devices, and keeps their presence and acknowledged offsets in
 * the database. Commits wake it through ctx.bus (in-process, and forwarded from PostgreSQL
 * NOTIFY for writes made by other instances); a poll is the backstop.
 */
export function startDeviceGateway(ctx: AppContext, server: Server, log: FastifyBaseLogger, overrides: Partial<DeviceGatewayOptions> = {}): DeviceGateway {
  const options = { ...defaultGatewayOptions, ...overrides };
  const db = ctx.db.db;
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxDeviceFrameBytes, perMessageDeflate: false, clientTracking: false });
  const streams = new Map<string, OrgStream>();
  const connections = new Map<string, DeviceConnection>(); // by device id
  const pendingAcks = new Map<string, AckUpdate>();
  const pendingWrites = new Set<Promise<unknown>>();
  const fanOut = new SocketFanOut({ threads: options.fanOutThreads, minParallel: options.parallelFanOutMin });
  let pendingUpgrades = 0;
  let stopping = false;

  const onError = (err: unknown, where: string) => log.error({ err, where }, 'device gateway error');

  /** Presence writes run in the background; stop() waits for them. */
  const background = (work: Promise<unknown>, where: string) => {
    const p = work.catch((err) => onError(err, where)).finally(() => pendingWrites.delete(p));
    pendingWrites.add(p);
    return p;
  };

  const streamOf = (orgId: string): OrgStream => {
    let stream = streams.get(orgId);
    if (!stream) {
      stream = new OrgStream(orgId, ctx.db, {
        pageSize: options.pageSize,
        replayHighWaterBytes: Math.floor(options.maxBufferedBytes / 2),
        onError,
        onLiveEvent: (createdAtMs) => ctx.metrics.deviceEventLatency.observe(Math.max(0, Date.now() - createdAtMs) / 1000),
        fanOut,
      });
      streams.set(orgId, stream);
    }
    return stream;
  };

  const unsubscribe = ctx.bus.onCommitted((event) => streams.get(event.orgId)?.wake(event));

  async function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const requestId = randomUUID();
    const url = new URL(req.url ?? '/', 'http://gateway.invalid');
    if (url.pathname !== DEVICE_STREAM_PATH) return refuseUpgrade(socket, 404, 'not_found', 'No WebSocket endpoint at this path.', requestId);
    if (stopping) return refuseUpgrade(socket, 503, 'unavailable', 'The server is shutting down; reconnect shortly.', requestId);
    if (connections.size + pendingUpgrades >= options.maxConnections) {
      return refuseUpgrade(socket, 503, 'unavailable', 'This instance has no room for more devices; retry shortly.', requestId);
    }
    const after = parseAfter(url.searchParams.get('after'));
    if (!after.ok) return refuseUpgrade(socket, 400, 'bad_request', 'after must be a non-negative integer stream offset.', requestId);
    pendingUpgrades++;
    let device: AuthenticatedDevice | null;
    let startAfter: number;
    let end: number;
    try {
      device = await authenticateDevice(ctx, bearerToken(req.headers.authorization));
      if (!device) return refuseUpgrade(socket, 401, 'unauthenticated', 'A valid device token is required: Authorization: Bearer enk_dev_...', requestId);
      // Without `after` the device starts at the present; an `after` beyond the stream's end (a device
      // that kept its position across a database restore) is brought back to the end, otherwise it
      // would silently skip every event until the stream caught up with its number.
      end = await committedOffset(db, device.orgId);
      startAfter = after.after === undefined ? end : Math.min(after.after, end);
    } catch (err) {
      onError(err, 'upgrade');
      return refuseUpgrade(socket, 503, 'unavailable', 'The device gateway cannot reach the database; retry shortly.', requestId);
    } finally {
      pendingUpgrades--;
    }
    if (stopping) return refuseUpgrade(socket, 503, 'unavailable', 'The server is shutting down; reconnect shortly.', requestId);
    const authenticated = device;
    const streamEnd = end;
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws, socket, authenticated, startAfter, streamEnd));
  }

  function accept(ws: WebSocket, socket: Duplex, device: AuthenticatedDevice, startAfter: number, end: number): void {
    const conn = new DeviceConnection(randomUUID(), device, ws, socket, startAfter, {
      maxBufferedBytes: options.maxBufferedBytes,
      closeGraceMs: options.closeGraceMs,
    });
    // One logical stream per device: a newer connection (a reconnect racing the old socket's
    // timeout) replaces the older one on this instance.
    connections.get(device.id)?.close(CloseCode.replaced, 'replaced by a newer connection of this device');
    connections.set(device.id, conn);
    ctx.metrics.devicesConnected.inc();
    const connected = background(markConnected(db, device, conn.id, new Date(conn.lastHeardAt).toISOString()), 'presence');
    conn.lastSeenWritten = conn.lastHeardAt;
    log.info({ deviceId: device.id, orgId: device.orgId, after: startAfter }, 'device connected');

    ws.on('message', (data: RawData, isBinary: boolean) => {
      conn.lastHeardAt = Date.now();
      if (isBinary) return conn.close(CloseCode.invalidFrame, 'frames must be JSON text');
      const frame = parseDeviceFrame(data.toString());
      if (!frame) return conn.close(CloseCode.invalidFrame, 'frames must be JSON objects with a "type"');
      // An ack beyond what this connection was sent cannot be about this stream: ignore it.
      if (frame.type === 'ack' && frame.offset <= conn.lastSent) {
        const previous = pendingAcks.get(device.id);
        if (!previous || previous.offset < frame.offset) {
          pendingAcks.set(device.id, { deviceId: device.id, orgId: device.orgId, offset: frame.offset, at: new Date().toISOString() });
        }
      }
    });
    ws.on('pong', () => {
      conn.lastHeardAt = Date.now();
    });
    ws.on('error', () => undefined);
    ws.on('close', () => {
      ctx.metrics.devicesConnected.dec();
      conn.closed();
      streams.get(device.orgId)?.leave(conn);
      if (connections.get(device.id) === conn) connections.delete(device.id);
      const lastSeen = new Date(conn.lastHeardAt).toISOString();
      background(
        connected.then(() => markDisconnected(db, device, conn.id, lastSeen, new Date().toISOString())),
        'presence',
      );
      log.info({ deviceId: device.id, orgId: device.orgId, lastSent: conn.lastSent }, 'device disconnected');
    });

    void streamOf(device.orgId)
      .admit(conn, startAfter >= end)
      .catch((err) => {
        onError(err, 'replay');
        conn.close(CloseCode.goingAway, 'replay failed; reconnect with after');
      });
  }

  const upgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    onUpgrade(req, socket, head).catch((err) => {
      onError(err, 'upgrade');
      socket.destroy();
    });
  };
  server.on('upgrade', upgradeListener);

  const heartbeat = setInterval(() => {
    const now = Date.now();
    const seen: { deviceId: string; orgId: string; lastSeenAt: string }[] = [];
    for (const conn of connections.values()) {
      if (now - conn.lastHeardAt > options.silenceTimeoutMs) {
        conn.close(CloseCode.silent, 'nothing received from the device within the silence timeout');
        continue;
      }
      conn.ping();
      if (conn.lastHeardAt > conn.lastSeenWritten) {
        conn.lastSeenWritten = conn.lastHeardAt;
        seen.push({ deviceId: conn.device.id, orgId: conn.device.orgId, lastSeenAt: new Date(Math.floor(now / 1000) * 1000).toISOString() });
      }
    }
    if (seen.length > 0) background(touchLastSeen(db, seen), 'presence');
  }, options.pingIntervalMs);

  // Silence is checked more often than pings are sent, so a dead peer goes within a few seconds of the timeout.
  const silenceCheck = setInterval(
    () => {
      const now = Date.now();
      for (const conn of connections.values()) {
        // The close frame tells a live-but-mute client why; a dead peer is destroyed after the close grace.
        if (now - conn.lastHeardAt > options.silenceTimeoutMs) conn.close(CloseCode.silent, 'nothing received from the device within the silence timeout');
      }
    },
    Math.max(50, Math.min(5_000, Math.floor(options.silenceTimeoutMs / 6))),
  );

  // Revocations are written by the admin CLI (another process); closing the open socket of a revoked
  // device is a poll on recent revocations, with a margin for commit delays and clock skew.
  const REVOCATION_MARGIN_MS = 60_000;
  let revocationsCheckedFrom = Date.now() - REVOCATION_MARGIN_MS;
  let revocationCheckRunning = false;
  const revocations = setInterval(() => {
    if (revocationCheckRunning || connections.size === 0) return;
    revocationCheckRunning = true;
    const startedAt = Date.now();
    background(
      revokedSince(db, [...new Set([...connections.values()].map((c) => c.device.orgId))], new Date(revocationsCheckedFrom).toISOString())
        .then((rows) => {
          for (const row of rows) connections.get(row.id)?.close(CloseCode.revoked, 'device credential revoked');
          revocationsCheckedFrom = startedAt - REVOCATION_MARGIN_MS;
        })
        .finally(() => {
          revocationCheckRunning = false;
        }),
      'revocation check',
    );
  }, options.revocationCheckMs);

  let pollRunning = false;
  const poll = setInterval(() => {
    if (pollRunning) return;
    for (const [orgId, stream] of streams) if (stream.idle) streams.delete(orgId);
    const active = [...streams.values()].filter((s) => s.live.size > 0);
    if (active.length === 0) return;
    pollRunning = true;
    background(
      committedOffsets(
        db,
        active.map((s) => s.orgId),
      )
        .then((offsets) => {
          for (const stream of active) {
            const committed = offsets.get(stream.orgId);
            if (committed !== undefined && stream.readOffset !== null && committed > stream.readOffset) stream.wake();
          }
        })
        .finally(() => {
          pollRunning = false;
        }),
      'backstop poll',
    );
  }, options.pollIntervalMs);

  // One flush at a time, its rows in device-id order (the order presence updates lock them in too), so
  // two writers never wait on each other's rows; a flush that fails puts its acks back unless a newer
  // one of the same device arrived meanwhile, so an ack is never lost to a busy or restarting database.
  let flushing: Promise<void> | null = null;
  const flushAcks = (): Promise<void> => {
    if (flushing || pendingAcks.size === 0) return Promise.resolve();
    const batch = [...pendingAcks.values()].sort((a, b) => (a.deviceId < b.deviceId ? -1 : a.deviceId > b.deviceId ? 1 : 0));
    pendingAcks.clear();
    flushing = recordAcks(ctx.db, batch)
      .catch((err) => {
        for (const ack of batch) {
          const newer = pendingAcks.get(ack.deviceId);
          if (!newer || newer.offset < ack.offset) pendingAcks.set(ack.deviceId, ack);
        }
        throw err;
      })
      .finally(() => {
        flushing = null;
      });
    return flushing;
  };
  const ackTimer = setInterval(() => background(flushAcks(), 'ack flush'), options.ackFlushMs);

  for (const t of [heartbeat, silenceCheck, revocations, poll, ackTimer]) t.unref();

  return {
    stats: () => ({ connections: connections.size, orgs: streams.size }),
    async stop() {
      stopping = true;
      server.off('upgrade', upgradeListener);
      unsubscribe();
      for (const t of [heartbeat, silenceCheck, revocations, poll, ackTimer]) clearInterval(t);
      const open = [...connections.values()];
      const closed = Promise.all(
        open.map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.ws.readyState === WebSocket.CLOSED) return resolve();
              c.ws.once('close', () => resolve());
            }),
        ),
      );
      for (const conn of open) conn.close(CloseCode.goingAway, 'server shutting down; reconnect with after');
      let graceTimer: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise((r) => (graceTimer = setTimeout(r, options.closeGraceMs + 500)))]);
      clearTimeout(graceTimer);
      for (const conn of open) conn.terminate();
      await closed;
      // The last acks: after a flush still running, one more for what arrived meanwhile.
      if (flushing) await (flushing as Promise<void>).catch(() => undefined);
      background(flushAcks(), 'ack flush');
      while (pendingWrites.size > 0) await Promise.all([...pendingWrites]);
      await fanOut.stop();
    },
  };
}
