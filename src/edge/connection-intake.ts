import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { addressGroupOf, type ClientAddresses } from './client-address.js';
import { readProxyHeader } from './proxy-protocol.js';

export interface IntakeOptions {
  /** Connections one client address may hold before one of them is authenticated. */
  unauthenticatedPerAddress: number;
  /** The time a client has for its first bytes (and for its PROXY header). */
  firstBytesTimeoutMs: number;
  /** Every connection starts with a PROXY protocol header. */
  proxyProtocol: boolean;
}

/**
 * The door of the HTTP server: reads the PROXY protocol header when it is enabled, closes connections that send nothing in time
 * (Node's headersTimeout starts at the first byte), and caps the connections each client address holds until one of them carries
 * an authenticated request or device upgrade, so that one address holding idle or slow sockets cannot take every slot.
 * Connections from a trusted proxy are not capped: they carry many clients, and the proxy's own limits protect them.
 */
export class ConnectionIntake {
  /** Unauthenticated connections per client address (group). */
  private readonly counts = new Map<string, number>();
  /** The group each counted connection takes from, until it is authenticated or closed. */
  private readonly counted = new WeakMap<Socket, string>();

  private constructor(
    private readonly addresses: ClientAddresses,
    private readonly options: IntakeOptions,
  ) {}

  /**
   * Puts the intake in front of `server`. Node's HTTP server takes sockets on 'connection' (an event its documentation lets users
   * emit to inject connections), so with the PROXY protocol its own listeners are moved behind the header reader.
   */
  static install(server: Server, addresses: ClientAddresses, options: IntakeOptions): ConnectionIntake {
    const intake = new ConnectionIntake(addresses, options);
    if (!options.proxyProtocol) {
      server.on('connection', (socket: Socket) => intake.admit(socket, false));
      return intake;
    }
    const httpListeners = server.listeners('connection') as ((socket: Socket) => void)[];
    server.removeAllListeners('connection');
    server.on('connection', (socket: Socket) => {
      socket.on('error', () => socket.destroy());
      readProxyHeader(socket, options.firstBytesTimeoutMs).then(
        ({ source, followedByData }) => {
          if (source !== null) addresses.name(socket, source);
          if (!intake.admit(socket, followedByData)) return;
          for (const listener of httpListeners) listener.call(server, socket);
          socket.resume();
        },
        () => socket.destroy(),
      );
    });
    return intake;
  }

  /** The connection carried an authenticated request: it no longer counts against its address. */
  authenticated(socket: Socket): void {
    const group = this.counted.get(socket);
    if (group === undefined) return;
    this.counted.delete(socket);
    this.release(group);
  }

  /** Unauthenticated connections held now from this address. */
  heldBy(address: string): number {
    return this.counts.get(addressGroupOf(address)) ?? 0;
  }

  /** Counts a new connection, or closes it when its address holds its share; false when closed. */
  private admit(socket: Socket, sentData: boolean): boolean {
    const peer = this.addresses.peerOf(socket);
    if (!sentData) {
      const before = socket.bytesRead;
      setTimeout(() => {
        if (socket.bytesRead === before && !socket.destroyed) socket.destroy();
      }, this.options.firstBytesTimeoutMs).unref();
    }
    if (this.addresses.isTrustedProxy(peer) && !this.options.proxyProtocol) return true;
    const group = addressGroupOf(peer);
    const held = this.counts.get(group) ?? 0;
    if (held >= this.options.unauthenticatedPerAddress) {
      socket.destroy();
      return false;
    }
    this.counts.set(group, held + 1);
    this.counted.set(socket, group);
    socket.once('close', () => this.authenticated(socket));
    return true;
  }

  private release(group: string): void {
    const held = this.counts.get(group) ?? 0;
    if (held <= 1) this.counts.delete(group);
    else this.counts.set(group, held - 1);
  }
}
