import { connect, type Socket } from 'node:net';

/**
 * One kept-alive HTTP/1.1 connection that writes requests serialized beforehand and reads each answer's
 * status line and Content-Length-framed body, one request at a time.
 *
 * It is the lightest client there is, built as autocannon's (prepared request bytes on a plain socket):
 * a request counts as sent when its bytes are handed to the kernel, as a broker client's publish does,
 * so that the time until a device has the frame is the service's and not an HTTP client library's.
 */
export class RawHttpConnection {
  private buffered: Buffer = Buffer.alloc(0);
  private waiting: { resolve(answer: RawAnswer): void; reject(err: Error): void } | null = null;
  private failure: Error | null = null;

  private constructor(
    private readonly socket: Socket,
    readonly host: string,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
      this.answer();
    });
    const fail = (err: Error) => {
      this.failure = err;
      this.waiting?.reject(err);
      this.waiting = null;
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed')));
  }

  static open(baseUrl: string): Promise<RawHttpConnection> {
    const url = new URL(baseUrl);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.off('error', reject);
        resolve(new RawHttpConnection(socket, url.host));
      });
      socket.once('error', reject);
    });
  }

  /** The bytes of one request with a JSON body. */
  request(method: string, path: string, headers: Record<string, string>, body: string): Buffer {
    const lines = [`${method} ${path} HTTP/1.1`, `host: ${this.host}`];
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
    lines.push('content-type: application/json', `content-length: ${Buffer.byteLength(body)}`, '', body);
    return Buffer.from(lines.join('\r\n'));
  }

  /** Writes `request` and resolves with its answer. */
  send(request: Buffer): Promise<RawAnswer> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.waiting) return Promise.reject(new Error('one request at a time'));
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(request);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  /** Completes the waiting request once its whole answer is buffered. */
  private answer(): void {
    if (!this.waiting) return;
    const headEnd = this.buffered.indexOf('\r\n\r\n');
    if (headEnd < 0) return;
    const head = this.buffered.subarray(0, headEnd).toString('latin1');
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!length) {
      this.waiting.reject(new Error('an answer without content-length'));
      this.waiting = null;
      return;
    }
    const end = headEnd + 4 + Number(length[1]);
    if (this.buffered.length < end) return;
    const body = this.buffered.subarray(headEnd + 4, end);
    this.buffered = this.buffered.subarray(end);
    const { resolve } = this.waiting;
    this.waiting = null;
    resolve({ status, body });
  }
}

export interface RawAnswer {
  status: number;
  body: Buffer;
}
