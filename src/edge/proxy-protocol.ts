import { isIP, type Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Command, IPv4ProxyAddress, IPv6ProxyAddress, V1ProxyProtocol, V2ProxyProtocol } from 'proxy-protocol-js';

const V2_SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
const V1_SIGNATURE = Buffer.from('PROXY ');
/** The longest v1 line the specification allows, CRLF included. */
const V1_MAX_BYTES = 107;
/** A v2 header with its TLVs (load balancers add a few, e.g. an endpoint id): anything longer is refused. */
const V2_MAX_BYTES = 4096;

/** The header's length once enough has arrived; undefined while it may still be one; null when it cannot be one. */
function headerLength(received: Buffer): number | null | undefined {
  const startsLike = (signature: Buffer) => received.subarray(0, signature.length).equals(signature.subarray(0, Math.min(received.length, signature.length)));
  if (startsLike(V2_SIGNATURE)) {
    if (received.length < 16) return undefined;
    const length = 16 + received.readUInt16BE(14);
    return length <= V2_MAX_BYTES ? length : null;
  }
  if (startsLike(V1_SIGNATURE)) {
    const end = received.indexOf('\r\n');
    if (end !== -1) return end + 2 <= V1_MAX_BYTES ? end + 2 : null;
    return received.length < V1_MAX_BYTES ? undefined : null;
  }
  return null;
}

/** The source address a complete header names; null for a health check of the proxy itself (v2 LOCAL, v1 UNKNOWN). */
function sourceOf(header: Buffer): string | null {
  if (header[0] === V1_SIGNATURE[0]) {
    const line = header.toString('latin1');
    if (/^PROXY UNKNOWN[ \r]/.test(line)) return null;
    const source = V1ProxyProtocol.parse(line).source.ipAddress;
    if (isIP(source) === 0) throw new Error('the PROXY header names no valid address');
    return source;
  }
  const parsed = V2ProxyProtocol.parse(new Uint8Array(header));
  if (parsed.command === Command.LOCAL) return null;
  const address = parsed.proxyAddress;
  if (address instanceof IPv4ProxyAddress || address instanceof IPv6ProxyAddress) {
    return ipaddr.fromByteArray([...address.sourceAddress.address]).toString();
  }
  // UNIX sockets and unspecified families name no network client: the proxy's own address stands for it.
  return null;
}

/** What a PROXY protocol header said: the client's address (null: the peer itself), and whether request bytes followed it. */
export interface ProxyHeader {
  source: string | null;
  followedByData: boolean;
}

/**
 * Reads a PROXY protocol header (v1 text or v2 binary) off a new connection, before the HTTP parser sees it, and puts back what
 * followed it. Rejects when the connection does not start with a valid header within `timeoutMs`.
 */
export function readProxyHeader(socket: Socket, timeoutMs: number): Promise<ProxyHeader> {
  return new Promise((resolve, reject) => {
    let received: Buffer = Buffer.alloc(0);
    const finish = (error: Error | null, header?: ProxyHeader) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      if (error) reject(error);
      else resolve(header!);
    };
    const timer = setTimeout(() => finish(new Error('no PROXY header in time')), timeoutMs);
    const onClose = () => finish(new Error('closed before its PROXY header'));
    const onData = (chunk: Buffer) => {
      received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
      const length = headerLength(received);
      if (length === undefined) return;
      if (length === null) return finish(new Error('not a PROXY protocol header'));
      if (received.length < length) return;
      socket.pause();
      const rest = received.subarray(length);
      if (rest.length > 0) socket.unshift(rest);
      try {
        finish(null, { source: sourceOf(received.subarray(0, length)), followedByData: rest.length > 0 });
      } catch (err) {
        finish(err as Error);
      }
    };
    socket.on('data', onData);
    socket.on('close', onClose);
  });
}
