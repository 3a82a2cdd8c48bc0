/**
 * The caller's callbacks of one library call: enqueueMany's and
 * enqueueBatch's `onResult`, waitForMany's `onReceipt`, the `onProgress` of
 * listJobs, gc and recover. Their types return void, so an async function
 * compiles; a promise it returned was dropped, and when it rejected Node
 * (20: --unhandled-rejections=throw) ended the whole process with an
 * unhandled rejection. A callback that throws has always made the call
 * reject with what it threw. Here a callback that rejects does the same:
 * its promise is held, its rejection is kept (the first failure; the call
 * checks at its next step, after the step in hand, so a record is never
 * left half-written), and the call waits for every promise its callbacks
 * returned before it resolves, so a late rejection still reaches the caller
 * and a call that resolved has no callback still running. Each call site
 * runs its callback after the commit point of what it reports: a failure
 * changes where the call stops and what it returns, never a record.
 * (waitFor's unservedNotice is advice: its failures are held and never
 * thrown, as its throws are caught.)
 */

/** A callback of an options object, or none. */
type Callback<A extends unknown[]> = ((...args: A) => unknown) | undefined;

export class CallerCallbacks {
  private failure: { error: unknown } | undefined;
  private readonly running = new Set<Promise<void>>();

  /**
   * `callback(...args)`. A throw is thrown at once (as it always was); a
   * promise (any thenable) is held, and its rejection is thrown by the next
   * `check()` or by `settle()`.
   */
  call<A extends unknown[]>(callback: Callback<A>, ...args: A): void {
    if (callback === undefined) return;
    const returned: unknown = callback(...args);
    if (!isThenable(returned)) return;
    const held: Promise<void> = Promise.resolve(returned).then(
      () => undefined,
      (error: unknown) => void (this.failure ??= { error }),
    );
    this.running.add(held);
    void held.then(() => this.running.delete(held));
  }

  /** Whether a callback has rejected (a call that loops stops taking work). */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /** Throws the first rejection of a callback seen so far. */
  check(): void {
    if (this.failure !== undefined) throw this.failure.error;
  }

  /** Waits until every promise a callback returned has settled, then throws the first rejection. */
  async settle(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running);
    this.check();
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
