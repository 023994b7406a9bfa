/**
 * The gateway's database writes that no device waits for (presence, acks, polls): failures are
 * logged rather than thrown, and stop() waits for every one so none is cut off at shutdown.
 */
export class BackgroundWork {
  private readonly pending = new Set<Promise<unknown>>();

  constructor(private readonly onError: (err: unknown, where: string) => void) {}

  /** Tracks `work` until it settles; the returned promise never rejects. */
  run(work: Promise<unknown>, where: string): Promise<unknown> {
    const p = work.catch((err) => this.onError(err, where)).finally(() => this.pending.delete(p));
    this.pending.add(p);
    return p;
  }

  /**
   * Runs `check` every `intervalMs`, never two at a time (a tick while the previous check runs is skipped);
   * `check` answers undefined when there is nothing to do. Returns the function that stops it.
   */
  every(intervalMs: number, where: string, check: () => Promise<unknown> | undefined): () => void {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      const work = check();
      if (!work) return;
      running = true;
      void this.run(
        work.finally(() => {
          running = false;
        }),
        where,
      );
    }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Resolves once nothing is running, including work started while waiting. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
