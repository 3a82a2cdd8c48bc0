/**
 * The one seam for time. Protocol code never calls Date.now() or setTimeout
 * directly, so tests can inject a clock and drive leases and waits
 * deterministically.
 *
 * Guarantees: `systemClock.nowMs()` is wall-clock milliseconds since the Unix
 * epoch (leases are compared across processes and hosts, so a per-process
 * monotonic clock would be meaningless to another reader; skew between hosts
 * is absorbed by LEASE_SKEW in foreignLeaseGraceMs, identity.ts). `sleep(ms)`
 * resolves after at least `ms` milliseconds and never keeps the process alive
 * on its own account longer than that; `sleep(ms, signal)` resolves early
 * when `signal` aborts, and then keeps nothing alive at all (a bound that
 * was not needed must not hold a finished program open until it expires).
 */
export interface Clock {
  nowMs(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Milliseconds from an arbitrary origin that never jump (CLOCK_MONOTONIC):
   * what this process measures elapsed time with (LEASE-4). A test clock that
   * fakes wall-clock jumps may leave it out: real monotonic time is used.
   */
  monotonicMs?(): number;
}

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  sleep: (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted === true) return resolve();
      const timer = setTimeout(done, Math.max(0, ms));
      signal?.addEventListener('abort', done, { once: true });
      function done(): void {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
    }),
  monotonicMs: () => performance.now(),
};

/** The monotonic time of `clock` (LEASE-4). */
export function monotonicMs(clock: Clock): number {
  return clock.monotonicMs?.() ?? performance.now();
}

/**
 * A deadline `ms` from now on the monotonic clock (LEASE-4): true once it
 * has passed. Every wait and every "leave it alone for a while" is measured
 * so: a deadline on the wall clock lasts an hour longer after the clock goes
 * back an hour (issue 28 point 2: a judge that put a live foreign claim
 * aside for a second skipped it for an hour, so never broke it once dead).
 */
export function deadlineIn(clock: Clock, ms: number): () => boolean {
  const at = monotonicMs(clock) + ms;
  return () => monotonicMs(clock) >= at;
}
