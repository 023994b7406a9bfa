import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { LRUCache } from 'lru-cache';
import { type WebSocket, WebSocketServer } from 'ws';
import type { AppContext } from '../context.js';
import { type AuthenticatedDevice, DEVICE_TOKEN_PATTERN } from '../domain/devices/schema.js';
import { authenticateDevice } from '../domain/devices/service.js';
import { bearerToken } from '../edge/auth.js';
import type { ConnectionBudget } from '../edge/connection-budget.js';
import type { AuthThrottle } from '../edge/auth-throttle.js';
import type { ClientAddresses } from '../edge/client-address.js';
import type { ConnectionIntake } from '../edge/connection-intake.js';
import type { TenantConnections } from '../edge/tenant-connections.js';
import { committedOffset } from '../log/reads.js';
import type { DeviceQuotas } from './device-quotas.js';
import { DEVICE_STREAM_PATH, parseAfter } from './protocol.js';

/** What the gateway shares with the rest of the process (see src/edge). */
export interface GatewayEdge {
  /**
   * Failed authentications per (client address, device id), the throttle REST and the tool server use: a
   * bad token takes from its pair, and a device id this instance has not authenticated before is looked up
   * only while the address has lookups left or the id is stored (AuthThrottle).
   */
  authFailures?: AuthThrottle;
  /** Who the client of an upgrade is (TRUST_PROXY, the PROXY protocol). */
  addresses?: ClientAddresses;
  /** The per-address cap on unauthenticated connections, which an authenticated device leaves. */
  intake?: ConnectionIntake;
  /** The long-lived connections' share of the open-file limit, which device sockets and event streams share. */
  connections?: ConnectionBudget;
  /** The long-lived connections by tenant, for the per-org and per-partner quotas that event streams share. */
  tenants?: TenantConnections;
}

export interface UpgradeGateOptions {
  /** Connections per instance; more are refused with 503 before the upgrade. */
  maxConnections: number;
  /** Largest frame a device may send. */
  maxDeviceFrameBytes: number;
}

/** A device let in: its WebSocket, the socket under it, and where its stream starts. */
export interface Admission {
  ws: WebSocket;
  socket: Duplex;
  device: AuthenticatedDevice;
  /** The offset after which events are sent. */
  startAfter: number;
  /** The org's committed offset at the upgrade. */
  end: number;
}

/** Device ids (the public part of a token) this instance has authenticated: their lookups are never throttled. */
const KNOWN_DEVICES_MAX = 200_000;

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  429: 'Too Many Requests',
  503: 'Service Unavailable',
};

/** Answers an upgrade request with a plain HTTP error, before any WebSocket is created. */
function refuseUpgrade(socket: Duplex, status: number, error: string, message: string, requestId: string, retryAfterSeconds?: number): void {
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify({ detail: { error, message } });
  const headers = [
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
    ...(status === 401 ? ['WWW-Authenticate: Bearer'] : []),
    ...(retryAfterSeconds !== undefined ? [`Retry-After: ${retryAfterSeconds}`] : []),
  ];
  socket.end(`${headers.join('\r\n')}\r\n\r\n${body}`);
}

/**
 * Answers WebSocket upgrades on /devices/v1/stream: refuses with a plain HTTP error what cannot be let
 * in (wrong path, no room, a bad `after`, a bad token, an address out of failed attempts, shutdown)
 * and hands every authenticated device to `admit` once the WebSocket handshake is done.
 */
export class UpgradeGate {
  private readonly wss: WebSocketServer;
  private readonly knownDevices = new LRUCache<string, true>({ max: KNOWN_DEVICES_MAX });
  /** Upgrades being authenticated: they count against the limits like open connections. */
  private pending = 0;
  private closed = false;
  private server: Server | undefined;
  private untrack: (() => void) | undefined;
  private readonly listener = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    this.answer(req, socket, head).catch((err) => {
      this.onError(err, 'upgrade');
      socket.destroy();
    });
  };

  constructor(
    private readonly ctx: AppContext,
    private readonly edge: GatewayEdge,
    /** Connections open on this instance. */
    private readonly held: () => number,
    private readonly options: UpgradeGateOptions,
    private readonly onError: (err: unknown, where: string) => void,
    private readonly admit: (admission: Admission) => void,
    private readonly quotas?: DeviceQuotas,
  ) {
    this.wss = new WebSocketServer({ noServer: true, maxPayload: options.maxDeviceFrameBytes, perMessageDeflate: false, clientTracking: false });
  }

  listen(server: Server): void {
    this.server = server;
    this.untrack = this.edge.connections?.track(() => this.held() + this.pending);
    server.on('upgrade', this.listener);
  }

  /** Refuses every upgrade from now on, those being authenticated included. */
  close(): void {
    this.closed = true;
    this.server?.off('upgrade', this.listener);
    this.untrack?.();
  }

  private async answer(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    // An upgrade has HEADERS_TIMEOUT_MS to complete, a refused one to be read: the WebSocket clears this timeout once open.
    req.socket.setTimeout(this.ctx.config.HEADERS_TIMEOUT_MS, () => socket.destroy());
    const requestId = randomUUID();
    const url = new URL(req.url ?? '/', 'http://gateway.invalid');
    if (url.pathname !== DEVICE_STREAM_PATH) return refuseUpgrade(socket, 404, 'not_found', 'No WebSocket endpoint at this path.', requestId);
    if (this.closed) return refuseUpgrade(socket, 503, 'unavailable', 'The server is shutting down; reconnect shortly.', requestId);
    if (this.held() + this.pending >= this.options.maxConnections || this.edge.connections?.full) {
      return refuseUpgrade(socket, 503, 'unavailable', 'This instance has no room for more devices; retry shortly.', requestId);
    }
    const after = parseAfter(url.searchParams.get('after'));
    if (!after.ok) return refuseUpgrade(socket, 400, 'bad_request', 'after must be a non-negative integer stream offset.', requestId);
    const { authFailures } = this.edge;
    this.pending++;
    let device: AuthenticatedDevice | null;
    let startAfter: number;
    let end: number;
    try {
      const token = bearerToken(req.headers.authorization);
      const address = this.edge.addresses?.of(req) ?? req.socket.remoteAddress ?? '';
      const deviceId = token === undefined ? undefined : DEVICE_TOKEN_PATTERN.exec(token)?.[1];
      // A device id not authenticated here before, from an address that has spent its lookups: looked up only if it is stored.
      const refusal = deviceId === undefined ? null : await authFailures?.lookupRefusal(address, deviceId, this.knownDevices.has(deviceId));
      device = refusal || deviceId === undefined ? null : await authenticateDevice(this.ctx, token);
      if (!device) {
        const decision = refusal ?? authFailures?.failed(address, deviceId);
        if (decision && !decision.allowed) {
          const message = `Too many failed authentications from this address; retry after ${decision.retryAfterSeconds} s.`;
          return refuseUpgrade(socket, 429, 'rate_limited', message, requestId, decision.retryAfterSeconds);
        }
        return refuseUpgrade(socket, 401, 'unauthenticated', 'A valid device token is required: Authorization: Bearer enk_dev_...', requestId);
      }
      this.knownDevices.set(deviceId!, true);
      this.edge.intake?.authenticated(req.socket);
      const overQuota = await this.quotas?.admit(device, socket);
      if (overQuota) {
        const { error } = overQuota;
        return refuseUpgrade(socket, error.status, error.code, error.message, requestId, overQuota.retryAfterSeconds);
      }
      // Without `after` the device starts at the present; an `after` beyond the stream's end (a device
      // that kept its position across a database restore) is brought back to the end, otherwise it
      // would silently skip every event until the stream caught up with its number.
      end = await committedOffset(this.ctx.db.db, device.orgId);
      startAfter = after.after === undefined ? end : Math.min(after.after, end);
    } catch (err) {
      this.onError(err, 'upgrade');
      return refuseUpgrade(socket, 503, 'unavailable', 'The device gateway cannot reach the database; retry shortly.', requestId);
    } finally {
      this.pending--;
    }
    if (this.closed) return refuseUpgrade(socket, 503, 'unavailable', 'The server is shutting down; reconnect shortly.', requestId);
    const authenticated = device;
    const streamEnd = end;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.admit({ ws, socket, device: authenticated, startAfter, end: streamEnd }));
  }
}
