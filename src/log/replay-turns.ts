/**
 * Paces the replays of this process: a page is read and written only while holding a turn, granted on
 * an event-loop iteration of its own, few at once. Otherwise fast replays (SQLite reads are synchronous)
 * would run page after page in microtasks and hold /healthz and every request meanwhile.
 */
export class ReplayTurns {
  private held = 0;
  private readonly waiting: (() => void)[] = [];
  private scheduled = false;

  constructor(private readonly atOnce: number) {}

  /** Resolves on a later iteration of the event loop, holding one of the turns; `release` gives it back. */
  acquire(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  release(): void {
    this.held--;
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.waiting.length === 0 || this.held >= this.atOnce) return;
    this.scheduled = true;
    setImmediate(this.grant);
  }

  private readonly grant = (): void => {
    this.scheduled = false;
    while (this.held < this.atOnce && this.waiting.length > 0) {
      this.held++;
      this.waiting.shift()!();
    }
  };
}
