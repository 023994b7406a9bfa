import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { AuthenticatedDevice } from '../domain/devices/schema.js';
import { CloseCode, eventFrame, pingFrame } from './protocol.js';

const TEXT = { binary: false } as const;

export interface ConnectionLimits {
  /** Above this many bytes queued for a live device, it is disconnected instead of buffering more. */
  maxBufferedBytes: number;
  /** After a close frame, how long the peer has to answer before the socket is destroyed. */
  closeGraceMs: number;
}

/**
 * One device socket. `lastSent` is the highest offset written to it: every send path skips offsets at
 * or below it, which is what makes replay followed by live delivery free of duplicates.
 */
export class DeviceConnection {
  lastSent: number;
  /** The highest offset the device acknowledged on this connection (written to the database in batches). */
  lastAcked = 0;
  lastHeardAt = Date.now();
  closing = false;

  constructor(
    readonly id: string,
    readonly device: AuthenticatedDevice,
    readonly ws: WebSocket,
    /** The upgraded socket under `ws`: a live frame, framed once per event, is written to it as is. */
    private readonly socket: Duplex,
    startAfter: number,
    private readonly limits: ConnectionLimits,
  ) {
    this.lastSent = startAfter;
  }

  get open(): boolean {
    return !this.closing && this.ws.readyState === this.ws.OPEN;
  }

  /**
   * Writes one live event, already framed for the wire (see wireTextFrame), unless it was already
   * sent. With compression off, ws writes every frame whole and at once, so a frame written to the
   * socket here never lands inside another. Returns false once the connection is unusable.
   */
  sendLive(offset: number, wire: Buffer): boolean {
    if (!this.open) return false;
    if (offset <= this.lastSent) return true;
    this.socket.write(wire);
    this.lastSent = offset;
    if (this.ws.bufferedAmount > this.limits.maxBufferedBytes) {
      this.close(CloseCode.tooSlow, 'too slow: send buffer limit exceeded; reconnect with after');
      return false;
    }
    return true;
  }

  /** Sends one replayed event frame unless it was already sent; `drained()` waits for its write. */
  private sendReplayed(offset: number, frame: Buffer): boolean {
    if (!this.open) return false;
    if (offset <= this.lastSent) return true;
    this.ws.send(frame, TEXT, this.onWritten);
    this.lastSent = offset;
    return true;
  }

  sendStored(offset: number, payload: string): boolean {
    return this.sendReplayed(offset, eventFrame(offset, payload));
  }

  /**
   * Sends an event already sent on this connection once more (an acknowledgement deadline's re-send), leaving `lastSent`
   * as it is: the device ignores an offset it has handled, and acknowledges it again. False when it was not sent.
   */
  resend(offset: number, frame: Buffer): boolean {
    if (!this.open || offset > this.lastSent) return false;
    this.ws.send(frame, TEXT, this.onWritten);
    if (this.ws.bufferedAmount > this.limits.maxBufferedBytes) {
      this.close(CloseCode.tooSlow, 'too slow: send buffer limit exceeded; reconnect with after');
      return false;
    }
    return true;
  }

  private writeWaiters: (() => void)[] = [];
  private readonly onWritten = (): void => {
    if (this.writeWaiters.length === 0 || this.ws.bufferedAmount > 0) return;
    const waiters = this.writeWaiters;
    this.writeWaiters = [];
    for (const w of waiters) w();
  };

  /**
   * Resolves once the send buffer has drained to the kernel, or the socket closed. Replay waits on it
   * between pages so a device catching up on many events never makes the server buffer them all.
   */
  drained(): Promise<void> {
    if (!this.open || this.ws.bufferedAmount === 0) return Promise.resolve();
    return new Promise((resolve) => this.writeWaiters.push(resolve));
  }

  ping(): void {
    if (!this.open) return;
    this.ws.send(pingFrame(), TEXT, this.onWritten);
    // A protocol-level ping too: any RFC 6455 client answers it, so a device that never writes
    // frames itself still proves it is alive.
    this.ws.ping(undefined, undefined, this.onWritten);
  }

  close(code: number, reason: string): void {
    if (this.closing) return;
    this.closing = true;
    this.releaseWaiters();
    try {
      this.ws.close(code, reason);
    } catch {
      this.ws.terminate();
      return;
    }
    // A slow or dead peer may never complete the closing handshake; do not hold its buffers.
    setTimeout(() => this.ws.terminate(), this.limits.closeGraceMs).unref();
  }

  terminate(): void {
    this.closing = true;
    this.releaseWaiters();
    this.ws.terminate();
  }

  /** Called once the socket has closed, whoever closed it. */
  closed(): void {
    this.closing = true;
    this.releaseWaiters();
  }

  private releaseWaiters(): void {
    const waiters = this.writeWaiters;
    this.writeWaiters = [];
    for (const w of waiters) w();
  }
}
