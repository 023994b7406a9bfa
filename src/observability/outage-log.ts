/** What the outage log writes to: a pino logger (or anything with error and info of that shape). */
export interface OutageLogger {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** A burst ends after this long without a failure. */
const QUIET_MS = 5000;

/**
 * One log line per failure burst, not per request: the first failure (message and code, never a stack, SQL or parameters),
 * then, once failures stop, how many there were.
 */
export class OutageLog {
  private logger: OutageLogger | null = null;
  private failures = 0;
  private lastAt = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly what: string,
    private readonly quietMs = QUIET_MS,
  ) {}

  attach(logger: OutageLogger): void {
    this.logger = logger;
  }

  get active(): boolean {
    return this.timer !== null;
  }

  failed(err: unknown): void {
    this.failures++;
    this.lastAt = Date.now();
    if (this.timer) return;
    const e = err as { message?: unknown; code?: unknown };
    const message = typeof e?.message === 'string' ? e.message.split('\n')[0]!.slice(0, 200) : 'unknown error';
    this.logger?.error(
      { error: message, ...(typeof e?.code === 'string' ? { code: e.code } : {}) },
      `${this.what} is unavailable; answering 503 unavailable until it recovers (one line per outage)`,
    );
    this.timer = setInterval(() => this.checkEnd(), Math.max(200, this.quietMs / 2));
    this.timer.unref();
  }

  private checkEnd(): void {
    if (Date.now() - this.lastAt < this.quietMs) return;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.logger?.info({ failures: this.failures }, `${this.what} outage over`);
    this.failures = 0;
  }
}
