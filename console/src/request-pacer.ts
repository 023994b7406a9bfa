/**
 * Starts reads no faster than a pace and with few at once, so that reading many organizations stays well
 * inside the key's rate limit (RATE_LIMIT_PER_KEY, 50 a second by default) and leaves the browser's
 * connections to the service free for the pages.
 */
export class RequestPacer {
  private readonly queue: (() => void)[] = [];
  private active = 0;
  private nextStart = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;

  constructor(
    private readonly perSecond: number,
    private readonly concurrency: number,
  ) {}

  /** Runs `task` in its turn; a task still queued when the pacer stops never runs (its promise stays pending). */
  run<T>(task: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push(() => {
        this.active++;
        task()
          .then(resolve, reject)
          .finally(() => {
            this.active--;
            this.pump();
          });
      });
      this.pump();
    });
  }

  /** Holds every start for `ms` (after a 429, the service asked to slow down). */
  pause(ms: number): void {
    this.nextStart = Math.max(this.nextStart, Date.now() + ms);
  }

  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
    if (this.timer) clearTimeout(this.timer);
  }

  private pump(): void {
    if (this.timer || this.stopped) return;
    while (this.queue.length > 0 && this.active < this.concurrency) {
      const wait = this.nextStart - Date.now();
      if (wait > 0) {
        this.timer = setTimeout(() => {
          this.timer = null;
          this.pump();
        }, wait);
        return;
      }
      this.nextStart = Date.now() + 1000 / this.perSecond;
      this.queue.shift()!();
    }
  }
}
