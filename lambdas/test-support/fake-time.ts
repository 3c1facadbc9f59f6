/**
 * Time that moves only when a test says so: a clock and a timer for the code under test. `advance`
 * fires due timers in order and lets the code they wake run before it moves on.
 */
export class FakeTime {
  public now = 0;
  private timers: Array<{ at: number; fn: () => void; cancelled: boolean }> = [];

  public readonly clock = (): number => this.now;

  public readonly timer = (fn: () => void, ms: number): (() => void) => {
    const entry = { at: this.now + ms, fn, cancelled: false };
    this.timers.push(entry);
    return () => {
      entry.cancelled = true;
    };
  };

  public async advance(ms: number): Promise<void> {
    const until = this.now + ms;
    await settle();
    for (;;) {
      const due = this.timers.filter((t) => !t.cancelled && t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.now = due.at;
      due.fn();
      await settle();
    }
    this.now = until;
  }
}

/** Lets every promise continuation that is ready run (fake ports resolve without I/O). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
