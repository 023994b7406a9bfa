import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';

/**
 * The one place that reads a private member of a Node object: a plain TCP socket's file descriptor,
 * for the helper-thread fan-out (fan-out.ts). Node offers no public way to it; the gain that justifies
 * it is in docs/benchmarks.md, and test/devices/socket-descriptor.test.ts fails on a Node major this
 * was not checked on, so an upgrade re-checks it.
 */
export const CHECKED_NODE_MAJORS = [20];

/** The socket's descriptor when a direct write is safe now (nothing queued in Node, plain TCP); -1 otherwise. */
export function writableDescriptor(socket: Duplex): number {
  const s = socket as Duplex & { _handle?: { fd?: number; constructor: { name: string } } | null; writableCorked?: number; connecting?: boolean };
  if (s.writableLength !== 0 || s.writableCorked || s.connecting || !s.writable || s.destroyed || socket instanceof TLSSocket) return -1;
  const handle = s._handle;
  const fd = handle?.constructor.name === 'TCP' ? handle.fd : undefined;
  return typeof fd === 'number' && fd >= 0 ? fd : -1;
}
