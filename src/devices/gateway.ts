import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { RawData } from 'ws';
import type { AppContext } from '../context.js';
import { AckRecorder } from './ack-recorder.js';
import { BackgroundWork } from './background-work.js';
import { DeviceConnection } from './connection.js';
import { DeviceQuotas } from './device-quotas.js';
import { ConnectionRegistry } from './connection-registry.js';
import { HeartbeatWatch } from './heartbeat-watch.js';
import { DeviceStreams } from './device-streams.js';
import { Presence } from './presence.js';
import { CloseCode, parseDeviceFrame } from './protocol.js';
import { ResendWatch } from './resend-watch.js';
import { RevocationWatch } from './revocation-watch.js';
import { type Admission, type GatewayEdge, UpgradeGate } from './upgrade-gate.js';

export type { GatewayEdge } from './upgrade-gate.js';

export interface DeviceGatewayOptions {
  /** `{"type":"ping"}` (and a WebSocket ping) to every device at this interval. */
  pingIntervalMs: number;
  /** A device heard from neither frame nor pong for this long is dropped. */
  silenceTimeoutMs: number;
  /** How often open sockets of revoked devices are looked for. */
  revocationCheckMs: number;
  /** Acknowledged offsets are written in batches at this interval. */
  ackFlushMs: number;
  /** How often acknowledgement deadlines' re-sends that fell due are looked for. */
  resendCheckMs: number;
  /** Per-device send buffer bound; a live device above it is disconnected (close 4429). */
  maxBufferedBytes: number;
  /** Largest frame a device may send. */
  maxDeviceFrameBytes: number;
  /** Connections per instance; more are refused with 503 before the upgrade. */
  maxConnections: number;
  closeGraceMs: number;
}

export const defaultGatewayOptions: DeviceGatewayOptions = {
  pingIntervalMs: 25_000,
  silenceTimeoutMs: 60_000,
  revocationCheckMs: 2_000,
  ackFlushMs: 1_000,
  resendCheckMs: 1_000,
  maxBufferedBytes: 1024 * 1024,
  maxDeviceFrameBytes: 4 * 1024,
  maxConnections: 100_000,
  closeGraceMs: 2_000,
};

/**
 * The device gateway: authenticates WebSocket upgrades on /devices/v1/stream (UpgradeGate), replays
 * and streams each org's committed events to its devices (DeviceStreams, following the org's event log), and keeps their presence and
 * acknowledged offsets in the database (Presence, AckRecorder). HeartbeatWatch and RevocationWatch
 * close the sockets of silent and revoked devices; ResendWatch sends an event again half-way to its
 * acknowledgement deadline. This class wires one socket's events to them.
 */
export class DeviceGateway {
  private readonly options: DeviceGatewayOptions;
  private readonly background: BackgroundWork;
  private readonly connections = new ConnectionRegistry();
  private readonly presence: Presence;
  private readonly streams: DeviceStreams;
  private readonly heartbeat: HeartbeatWatch;
  private readonly revocations: RevocationWatch;
  private readonly acks: AckRecorder;
  private readonly resends: ResendWatch;
  private readonly gate: UpgradeGate;
  private readonly onError: (err: unknown, where: string) => void;
  private stopped: Promise<void> | undefined;

  constructor(
    private readonly ctx: AppContext,
    private readonly server: Server,
    private readonly log: FastifyBaseLogger,
    overrides: Partial<DeviceGatewayOptions> = {},
    edge: GatewayEdge = {},
  ) {
    const options = { ...defaultGatewayOptions, ...overrides };
    this.options = options;
    const onError = (err: unknown, where: string) => log.error({ err, where }, 'device gateway error');
    this.onError = onError;
    this.background = new BackgroundWork(onError);
    this.presence = new Presence(ctx.db, this.background);
    this.streams = new DeviceStreams(ctx, onError, Math.floor(options.maxBufferedBytes / 2));
    this.heartbeat = new HeartbeatWatch(this.connections, this.presence, options);
    this.revocations = new RevocationWatch(ctx.db, this.connections, this.background, options.revocationCheckMs);
    this.acks = new AckRecorder(ctx.db, this.background, options.ackFlushMs);
    this.resends = new ResendWatch(ctx, this.connections, this.background, options.resendCheckMs);
    this.gate = new UpgradeGate(
      ctx,
      edge,
      () => this.connections.size,
      options,
      onError,
      (admission) => this.accept(admission),
      edge.tenants && new DeviceQuotas(ctx, edge.tenants, options.maxConnections, (deviceId) => this.connections.get(deviceId) !== undefined),
    );
  }

  start(): void {
    this.gate.listen(this.server);
    this.heartbeat.start();
    this.revocations.start();
    this.acks.start();
    this.resends.start();
  }

  /** Refuses new devices, closes the open ones with a reconnect hint and writes what is left to write. */
  stop(): Promise<void> {
    this.stopped ??= this.shutDown();
    return this.stopped;
  }

  stats(): { connections: number; orgs: number } {
    return { connections: this.connections.size, orgs: this.streams.orgs };
  }

  private async shutDown(): Promise<void> {
    this.gate.close();
    this.heartbeat.stop();
    this.revocations.stop();
    this.resends.stop();
    await this.connections.closeAll(this.options.closeGraceMs + 500);
    await this.acks.stop();
    this.streams.stop();
    await this.background.settled();
  }

  private accept({ ws, socket, device, startAfter, end }: Admission): void {
    const conn = new DeviceConnection(randomUUID(), device, ws, socket, startAfter, {
      maxBufferedBytes: this.options.maxBufferedBytes,
      closeGraceMs: this.options.closeGraceMs,
    });
    this.connections.add(conn);
    this.ctx.metrics.devicesConnected.inc();
    this.presence.connected(conn);
    this.log.info({ deviceId: device.id, orgId: device.orgId, after: startAfter }, 'device connected');

    ws.on('message', (data: RawData, isBinary: boolean) => {
      conn.lastHeardAt = Date.now();
      if (isBinary) return conn.close(CloseCode.invalidFrame, 'frames must be JSON text');
      const frame = parseDeviceFrame(data.toString());
      if (!frame) return conn.close(CloseCode.invalidFrame, 'frames must be JSON objects with a "type"');
      if (frame.type === 'ack') this.acks.record(conn, frame.offset);
    });
    ws.on('pong', () => {
      conn.lastHeardAt = Date.now();
    });
    ws.on('error', () => undefined);
    ws.on('close', () => {
      this.ctx.metrics.devicesConnected.dec();
      conn.closed();
      this.streams.leave(conn);
      this.connections.remove(conn);
      this.presence.disconnected(conn);
      this.log.info({ deviceId: device.id, orgId: device.orgId, lastSent: conn.lastSent }, 'device disconnected');
    });

    this.streams.admit(conn, startAfter >= end).catch((err) => {
      this.onError(err, 'replay');
      conn.close(CloseCode.goingAway, 'replay failed; reconnect with after');
    });
  }
}

/** Builds the gateway and starts it: the shape startServer's background parts use. */
export function startDeviceGateway(
  ctx: AppContext,
  server: Server,
  log: FastifyBaseLogger,
  overrides: Partial<DeviceGatewayOptions> = {},
  edge: GatewayEdge = {},
): DeviceGateway {
  const gateway = new DeviceGateway(ctx, server, log, overrides, edge);
  gateway.start();
  return gateway;
}
