import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import proxyaddr from '@fastify/proxy-addr';
import ipaddr from 'ipaddr.js';
import type { TrustedProxies } from '../config.js';
import { forwardedFor } from './forwarded-header.js';

/** Whether a proxy at `address`, `hop` proxies away from this service, may name the client. */
export type ProxyTrust = (address: string, hop: number) => boolean;

/** TRUST_PROXY as a trust function, the shape Fastify's `trustProxy` and proxy-addr take; null when no proxy is trusted. */
export function proxyTrust(trusted: TrustedProxies | null): ProxyTrust | null {
  if (trusted === null) return null;
  if ('hops' in trusted) return (_address, hop) => hop < trusted.hops;
  return proxyaddr.compile(trusted.addresses);
}

/**
 * What limits count per client: an IPv4 address (an IPv4-mapped IPv6 one included), or the /64 of an IPv6 address, since one
 * IPv6 host is usually handed a whole /64 and could otherwise take a fresh address for every connection.
 */
export function addressGroupOf(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${(parsed as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':')}::/64`;
}

/**
 * Who the client of a connection or request is: the socket's peer, or the address a PROXY protocol header named for it, then,
 * when TRUST_PROXY trusts that peer, the address its X-Forwarded-For/Forwarded gives, walking back over trusted proxies only.
 */
export class ClientAddresses {
  private readonly named = new WeakMap<Socket, string>();

  constructor(readonly trust: ProxyTrust | null) {}

  /** The peer of a socket: the address its PROXY protocol header named, or the socket's own remote address. */
  peerOf(socket: Socket): string {
    return this.named.get(socket) ?? socket.remoteAddress ?? '';
  }

  /** Records the client address a PROXY protocol header named for this connection. */
  name(socket: Socket, address: string): void {
    this.named.set(socket, address);
  }

  /** Whether a connection from this peer comes through a trusted proxy, whose many clients share its address. */
  isTrustedProxy(peer: string): boolean {
    return this.trust?.(peer, 0) ?? false;
  }

  /** The client address of a request (REST, the tool server or a device upgrade). */
  of(request: IncomingMessage): string {
    let address = this.peerOf(request.socket);
    if (this.trust === null) return address;
    const reported = forwardedFor(request.headers);
    for (let hop = 0; hop < reported.length; hop++) {
      if (!this.trust(address, hop)) return address;
      address = reported[reported.length - 1 - hop]!;
    }
    return address;
  }
}
