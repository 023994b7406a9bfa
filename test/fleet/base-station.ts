import WebSocket from 'ws';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A base station as the protocol asks it to behave: it acknowledges each event it handles and, when its
 * connection drops, reconnects to the next gateway of its list with jittered backoff and `after` = the last
 * offset it handled. A frame at or below that offset is a duplicate: the service sent again what was acknowledged.
 */
export class BaseStation {
  /** Offsets handled, in arrival order, with the gateway that delivered each. */
  readonly handled: { offset: number; gateway: string }[] = [];
  readonly duplicates: number[] = [];
  /** The gateway of each connection that opened. */
  readonly connections: string[] = [];
  lastHandled = 0;
  private ws: WebSocket | undefined;
  private stopped = false;

  constructor(
    readonly token: string,
    private readonly gateways: string[],
    private index: number,
  ) {}

  get open(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** The offsets handled, in arrival order. */
  get offsets(): number[] {
    return this.handled.map((h) => h.offset);
  }

  get gateway(): string {
    return this.gateways[this.index % this.gateways.length]!;
  }

  /** The first connection, to the device's own gateway. */
  start(): Promise<void> {
    return this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise((resolve) => ws.once('close', resolve));
    ws.close();
    await closed;
  }

  private connect(): Promise<void> {
    const gateway = this.gateway;
    const url = new URL(gateway);
    url.searchParams.set('after', String(this.lastHandled));
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${this.token}` } });
    // Attached before the connection opens: the replay may arrive in the same packet as the upgrade's answer.
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      if (frame.type === 'ping') return ws.send(JSON.stringify({ type: 'pong' }));
      if (frame.type !== 'event') return;
      if (frame.offset <= this.lastHandled) {
        this.duplicates.push(frame.offset);
        return;
      }
      this.handled.push({ offset: frame.offset, gateway });
      this.lastHandled = frame.offset;
      ws.send(JSON.stringify({ type: 'ack', offset: frame.offset }));
    });
    return new Promise((resolve, reject) => {
      let opened = false;
      ws.once('open', () => {
        opened = true;
        this.ws = ws;
        this.connections.push(gateway);
        resolve();
      });
      ws.once('unexpected-response', (_req, res) => {
        res.resume();
        reject(new Error(`upgrade refused with ${res.statusCode}`));
        ws.terminate();
      });
      ws.on('error', (err) => reject(err));
      ws.on('close', () => {
        if (opened && !this.stopped) void this.reconnect();
      });
    });
  }

  private async reconnect(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      this.index++;
      await sleep(Math.random() * 100 * 2 ** Math.min(attempt, 4));
      if (this.stopped) return;
      try {
        return await this.connect();
      } catch {
        // The next gateway of the list is tried after a longer pause.
      }
    }
  }
}
