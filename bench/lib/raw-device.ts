/**
 * A measuring device for the push benchmark: a plain TCP socket that performs the WebSocket
 * handshake itself and then reads the server's frames straight off the wire, as base-station firmware
 * would.
 *
 * Why not the `ws` client: a thousand devices share this one process (and one of the machine's two
 * cores), so each frame's client-side cost is paid a thousand times in a row and shows up as latency
 * of the devices read last. ws's receiver (a Writable stream, an event and a decode per message) costs
 * several times a bare read. These sockets read with node:net's `onread` (one reused buffer, no
 * stream), and the bare TCP floor in bench/devices.ts reads the same way, so the two are measured
 * alike. The tests use the real ws client.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

export type OnEventFrame = (offset: number, at: number) => void;

/** Handshake read buffer, and the most a frame read here may span. */
const READ_BUFFER_BYTES = 64 * 1024;
const EVENT_PREFIX = Buffer.from('{"type":"event","offset":');

/**
 * A socket whose incoming bytes go to `onBytes` (with the time they were read) through `onread`.
 * The bytes are only valid during the call: the buffer is reused by the next read.
 */
export function connectReader(port: number, host: string, onBytes: (bytes: Buffer, at: number) => void): Socket {
  const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  const socket = connect({
    port,
    host,
    noDelay: true,
    onread: { buffer, callback: (n: number, buf: Uint8Array) => (onBytes((buf as Buffer).subarray(0, n), performance.now()), true) },
  });
  return socket;
}

/** Opens one device stream; `onFrame` gets each event frame's offset and the time its last byte was read. */
export function connectRawDevice(wsUrl: string, token: string, onFrame: OnEventFrame): Promise<Socket> {
  const url = new URL(wsUrl);
  return new Promise((resolve, reject) => {
    let handshake: Buffer | null = Buffer.alloc(0);
    const frames = frameReader(onFrame);
    const socket = connectReader(Number(url.port), url.hostname, (bytes, at) => {
      if (!handshake) return frames(bytes, at);
      handshake = Buffer.concat([handshake, bytes]);
      const end = handshake.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = handshake.toString('latin1', 0, end);
      const rest = Buffer.from(handshake.subarray(end + 4));
      handshake = null;
      if (!head.startsWith('HTTP/1.1 101')) {
        socket.destroy();
        return reject(new Error(`upgrade refused: ${head.split('\r\n')[0]}`));
      }
      resolve(socket);
      if (rest.length > 0) frames(rest, at);
    });
    socket.once('error', reject);
    socket.write(
      `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\n` +
        `Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`,
    );
  });
}

/** Parses unmasked server frames from a byte stream (a frame may span reads, a read may hold several). */
function frameReader(onFrame: OnEventFrame): (chunk: Buffer, at: number) => void {
  let pending: Buffer | null = null;
  return (chunk, at) => {
    const buf = pending ? Buffer.concat([pending, chunk]) : chunk;
    pending = null;
    let pos = 0;
    while (buf.length - pos >= 2) {
      const opcode = buf[pos]! & 0x0f;
      let length = buf[pos + 1]! & 0x7f;
      let header = 2;
      if (length === 126) {
        if (buf.length - pos < 4) break;
        length = buf.readUInt16BE(pos + 2);
        header = 4;
      } else if (length === 127) {
        if (buf.length - pos < 10) break;
        length = Number(buf.readBigUInt64BE(pos + 2));
        header = 10;
      }
      if (buf.length - pos < header + length) break;
      const start = pos + header;
      if (opcode === 0x1 && buf.compare(EVENT_PREFIX, 0, EVENT_PREFIX.length, start, start + EVENT_PREFIX.length) === 0) {
        let offset = 0;
        for (let i = start + EVENT_PREFIX.length; buf[i]! >= 0x30 && buf[i]! <= 0x39; i++) offset = offset * 10 + buf[i]! - 0x30;
        onFrame(offset, at);
      }
      pos = start + length;
    }
    // Copied: the read buffer is reused by the next read.
    if (pos < buf.length) pending = Buffer.from(buf.subarray(pos));
  };
}
