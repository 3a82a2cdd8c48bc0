/**
 * LEASE-3 and LEASE-4: a foreign claim is judged on this judge's own
 * monotonic clock, because wall clocks jump and differ between hosts. Per
 * claim the watch remembers the renewal instant it last read and when it
 * first read that value:
 *
 * - unchanged for lease_ms + GUARDIAN_LIMIT + LEASE_SKEW of monotonic time
 *   (foreignLeaseGraceMs): the owner is dead, whatever the wall clock says
 *   (a clock that jumped back, or a renewal stamped in the future by a clock
 *   that was ahead, cannot keep a dead owner alive); by then the owner fenced
 *   itself (LEASE-6) or its guardian stopped its commands (LEASE-5);
 * - seen to change: the owner is alive, whatever the wall clock says (a clock
 *   that jumped forward cannot kill a live owner);
 * - not watched that long yet: never dead. A claim the wall clock shows
 *   expired (LEASE-3's old bound) is `unknown` until the watch completes: in
 *   1.0 a judge whose clock ran ahead broke live claims on that bound alone.
 *
 * A claim that missed a renewal by the wall clock (older than RENEW_INTERVAL
 * + LEASE_SKEW) and has not been seen renewing carries `watchRemainingMs`,
 * so that a one-shot consumer knows to wait for it (MANIFEST-4).
 *
 * The same watch times retry delays (RETRY-4): an end record's retry is due
 * once `retry_at_ms - ended_ms` has passed on the monotonic clock since it
 * was first seen, even when a wall clock that jumped back says otherwise.
 *
 * Same-host owners are judged by pid and start (ID-6) and never pass here.
 */
import { monotonicMs, systemClock, type Clock } from '../base/clock.ts';
import { LEASE_SKEW, renewInterval } from '../base/constants.ts';
import { foreignLeaseGraceMs, type LeaseFacts, type OwnerJudgement } from './identity.ts';

/** Claims remembered at most; the oldest are forgotten first (then judged from first sight again). */
const WATCH_MAX = 100_000;

interface Sighting {
  renewalMs: number;
  sinceMono: number;
  /** The renewal changed while we watched. */
  renewed: boolean;
}

export class LeaseWatch {
  private readonly seen = new Map<string, Sighting>();
  private readonly clock: Clock;

  constructor(clock: Clock = systemClock) {
    this.clock = clock;
  }

  /** `byWall` is judgeOwner's verdict (LEASE-3); `key` names the claim (queue, job, generation). */
  judge(key: string, lease: LeaseFacts, byWall: OwnerJudgement): OwnerJudgement {
    if (byWall.basis !== 'lease') return byWall;
    const mono = monotonicMs(this.clock);
    let sighting = this.seen.get(key);
    if (sighting === undefined || sighting.renewalMs !== lease.lastRenewalMs) {
      const renewed = sighting !== undefined;
      this.seen.delete(key);
      if (this.seen.size >= WATCH_MAX) this.seen.delete(this.seen.keys().next().value as string);
      sighting = { renewalMs: lease.lastRenewalMs, sinceMono: mono, renewed };
      this.seen.set(key, sighting);
    }
    const unchanged = Math.round(mono - sighting.sinceMono);
    const grace = foreignLeaseGraceMs(lease.leaseMs);
    if (unchanged > grace) {
      return { verdict: 'dead', basis: 'lease', reason: `foreign owner: its renewal stayed unchanged for ${unchanged} ms of this judge's monotonic clock (LEASE-3)` };
    }
    if (sighting.renewed) {
      return { verdict: 'alive', basis: 'lease', reason: `foreign owner: seen renewing ${unchanged} ms ago on this judge's monotonic clock (LEASE-4)` };
    }
    const missed = lease.nowMs - lease.lastRenewalMs > renewInterval(lease.leaseMs) + LEASE_SKEW;
    const watch = missed ? { watchRemainingMs: grace + 1 - unchanged } : {};
    if (byWall.verdict === 'dead') {
      return {
        verdict: 'unknown',
        basis: 'lease',
        reason: `foreign owner: ${byWall.reason}; it is broken only after its renewal stays unchanged for ${grace} ms of this judge's monotonic clock (${grace + 1 - unchanged} ms more, LEASE-3)`,
        ...watch,
      };
    }
    return { ...byWall, ...watch };
  }

  /**
   * RETRY-4: whether the retry of an end record (`key` names it) is due: now
   * >= retry_at_ms by the wall clock, or retry_at_ms - ended_ms watched on the
   * monotonic clock since it was first seen.
   */
  retryDue(key: string, end: { retry_at_ms: number; ended_ms: number }, nowMs: number): boolean {
    return this.retryDueInMs(key, end, nowMs) === 0;
  }

  /**
   * RETRY-4: milliseconds until that retry is due, 0 when it is: the earlier
   * of the wall clock's retry_at_ms and the end of the monotonic watch, so a
   * consumer whose wall clock jumped back waits for the retry delay, not for
   * the jump (MANIFEST-4's CONSUME_RETRY_WAIT is measured on this).
   */
  retryDueInMs(key: string, end: { retry_at_ms: number; ended_ms: number }, nowMs: number): number {
    if (nowMs >= end.retry_at_ms) return 0;
    const mono = monotonicMs(this.clock);
    const id = `retry\0${key}\0${end.ended_ms}`;
    let sighting = this.seen.get(id);
    if (sighting === undefined) {
      if (this.seen.size >= WATCH_MAX) this.seen.delete(this.seen.keys().next().value as string);
      sighting = { renewalMs: end.retry_at_ms, sinceMono: mono, renewed: false };
      this.seen.set(id, sighting);
    }
    const watchLeft = end.retry_at_ms - end.ended_ms - (mono - sighting.sinceMono);
    return Math.max(0, Math.min(end.retry_at_ms - nowMs, Math.ceil(watchLeft)));
  }
}
