/**
 * LEASE-4 for a judge that runs for long (a worker): wall clocks jump, so it
 * also measures a foreign lease on its own monotonic clock. Per claim it
 * remembers the renewal instant it last read and when it first read that
 * value:
 *
 * - unchanged for lease_ms + GUARDIAN_LIMIT + LEASE_SKEW of monotonic time
 *   (foreignLeaseGraceMs: a dead owner's guardian may stop its commands up
 *   to GUARDIAN_LIMIT after the owner's last self-fencing instant): the lease
 *   expired, whatever the wall clock says (a clock that jumped back, or a renewal
 *   stamped in the future by a clock that was ahead, cannot keep a dead owner
 *   alive);
 * - seen to change within that time: the owner is alive, whatever the wall
 *   clock says (a clock that jumped forward cannot kill a live owner);
 * - not seen to change yet (first sight): LEASE-3 on the wall clock.
 *
 * Same-host owners are judged by pid and start (ID-6) and never pass here.
 */
import { monotonicMs, systemClock, type Clock } from '../base/clock.ts';
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
    if (unchanged > foreignLeaseGraceMs(lease.leaseMs)) {
      return { verdict: 'dead', basis: 'lease', reason: `foreign owner: its renewal stayed unchanged for ${unchanged} ms of this judge's monotonic clock (LEASE-4)` };
    }
    if (sighting.renewed) {
      return { verdict: 'alive', basis: 'lease', reason: `foreign owner: seen renewing ${unchanged} ms ago on this judge's monotonic clock (LEASE-4)` };
    }
    return byWall;
  }
}
