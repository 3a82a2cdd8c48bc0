/**
 * How the worker's loop waits between scans: a sleep that any event (a job
 * ended, a watch event, a stop) cuts short. An event that arrives while the
 * loop is busy scanning is kept, so the next sleep returns at once instead of
 * waiting out its timer with work to do.
 */
export class LoopWake {
  private readonly wakers = new Set<() => void>();
  private woken = false;

  /** Waits `ms`, or until wake(); returns at once if a wake() came since the last sleep. */
  sleep(ms: number): Promise<void> {
    return this.until(ms);
  }

  /** Waits until wake(), with no timer: while claims are in flight, each one's end wakes the loop (claims-in-flight.ts). */
  next(): Promise<void> {
    return this.until(undefined);
  }

  private until(ms: number | undefined): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = ms === undefined ? undefined : setTimeout(done, ms);
      this.wakers.add(done);
    });
  }

  /** Ends the current sleep, or the next one if none is under way. */
  wake(): void {
    if (this.wakers.size === 0) this.woken = true;
    for (const waker of [...this.wakers]) waker();
  }
}
