/**
 * The device wire protocol (README "Base-station devices"). Server frames are JSON text:
 *   {"type":"event","offset":N,"event":<envelope>}   one committed event of the device's org
 *   {"type":"ping"}                                   every heartbeat interval
 * Device frames: {"type":"ack","offset":N} (recorded as the acknowledged offset) and
 * {"type":"pong"}; any frame, and any WebSocket pong, counts as a sign of life.
 */
export const DEVICE_STREAM_PATH = '/devices/v1/stream';

/** Close codes, 4000 + the closest HTTP status, so firmware can map them without a table lookup. */
export const CloseCode = {
  /** Server shutting down or restarting: reconnect with `after`. */
  goingAway: 1001,
  /** A frame that is not JSON text. */
  invalidFrame: 1007,
  /** The device's credential was revoked: do not reconnect with it. */
  revoked: 4401,
  /** Nothing received from the device for the silence timeout. */
  silent: 4408,
  /** Another connection authenticated as the same device on this instance. */
  replaced: 4409,
  /** The device did not read fast enough and the send buffer passed its bound. */
  tooSlow: 4429,
} as const;

const PING_FRAME = Buffer.from('{"type":"ping"}');
export const pingFrame = (): Buffer => PING_FRAME;

/**
 * The payload column already holds the envelope as JSON text, so the frame is assembled as a string
 * (no parse/stringify round trip) and encoded once for every socket of the org.
 */
export function eventFrame(offset: number, payload: string): Buffer {
  return Buffer.from(`{"type":"event","offset":${offset},"event":${payload}}`);
}

/**
 * A text frame as it goes on the wire (RFC 6455 §5.2: FIN and the text opcode, the payload length in
 * 7, 16 or 64 bits, no mask from a server), so a live event is framed once and the same bytes are
 * written to every device.
 */
export function wireTextFrame(payload: Buffer): Buffer {
  const length = payload.length;
  const headerLength = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(headerLength + length);
  frame[0] = 0x81;
  if (length < 126) {
    frame[1] = length;
  } else if (length < 65_536) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  payload.copy(frame, headerLength);
  return frame;
}

export type DeviceFrame = { type: 'ack'; offset: number } | { type: 'pong' } | { type: 'other' };

/** Parses a device frame; null when it is not a JSON object with a string `type`. */
export function parseDeviceFrame(text: string): DeviceFrame | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const { type, offset } = value as { type?: unknown; offset?: unknown };
  if (typeof type !== 'string') return null;
  if (type === 'ack') {
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) return null;
    return { type: 'ack', offset };
  }
  if (type === 'pong') return { type: 'pong' };
  // Unknown types are ignored so devices may send newer frames to older servers.
  return { type: 'other' };
}

/** `after` query parameter: absent, or a non-negative integer offset. */
export function parseAfter(raw: string | null): { ok: true; after: number | undefined } | { ok: false } {
  if (raw === null) return { ok: true, after: undefined };
  if (!/^\d{1,15}$/.test(raw)) return { ok: false };
  return { ok: true, after: Number(raw) };
}
