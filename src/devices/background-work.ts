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

  /** Resolves once nothing is running, including work started while waiting. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
