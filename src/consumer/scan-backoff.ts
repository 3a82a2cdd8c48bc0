/**
 * A worker whose scans keep failing (EMFILE, EIO: issue 19 point 5) backs off
 * instead of failing every poll, and drain/once give up only after a while:
 * a queue that could not be scanned is not a drained queue.
 */

/** Longest pause between two failed turns. */
const SCAN_BACKOFF_MAX = 30_000;
/** How long drain and once keep trying queues whose scans fail before they stop with the error. */
const SCAN_FAILURE_LIMIT = 60_000;

/** Consecutive turns whose scans failed, and since when (monotonic milliseconds: LEASE-4). */
export class ScanBackoff {
  private failures = 0;
  private sinceMs = 0;

  /** Record one turn: whether any scan of it failed, at `nowMs`. */
  turn(failed: boolean, nowMs: number): void {
    if (!failed) this.failures = 0;
    else if (this.failures++ === 0) this.sinceMs = nowMs;
  }

  /** Whether the failures have lasted SCAN_FAILURE_LIMIT (drain and once stop then). */
  exhausted(nowMs: number): boolean {
    return this.failures > 0 && nowMs - this.sinceMs >= SCAN_FAILURE_LIMIT;
  }

  /** The pause after the current run of failed turns: pollMs doubling up to SCAN_BACKOFF_MAX. */
  pause(pollMs: number): number {
    if (this.failures === 0) return pollMs;
    return Math.min(SCAN_BACKOFF_MAX, pollMs * 2 ** Math.min(this.failures - 1, 16));
  }
}
