/**
 * The control loop of a running attempt: every CONTROL_POLL (well inside
 * CONTROL_LATENCY) it checks, in this order,
 *
 * 1. ownership (CLAIM-7): `claim.<g+1>.json` exists → stop at once (OWN-1);
 * 2. cancel records (CANCEL-3): `cancel-force.json` → kill, `cancel.json` → TERM;
 * 3. the lease (LEASE-1): renew by publishing `state.<g>.json` every
 *    RENEW_INTERVAL; an owner that cannot renew stops its execution before
 *    the lease runs out (LEASE-2), and a lease that lapsed (this process did
 *    not run for lease_ms: SIGSTOP, a filesystem call that hung) is never
 *    renewed: the execution is stopped instead (LEASE-6), since the guardian
 *    has stopped it already or is about to (LEASE-5) and a judge on another
 *    host may break the claim. Both intervals are measured on the monotonic
 *    clock, and a heartbeat never says less than the last one plus the time
 *    really elapsed, so a wall clock that jumps back neither stops the
 *    renewals nor makes them look stale to other hosts (LEASE-4). After each
 *    renewal the guardian is told its new deadline (onRenewed);
 * 4. preemption (PREEMPT-1): a preemptible job of a lane stops when a
 *    non-preemptible job of that lane waits.
 */
import { CONTROL_LATENCY, CONTROL_POLL, renewInterval } from '../base/constants.ts';
import { monotonicMs } from '../base/clock.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import type { SpecRecord, StateRecord } from '../records/codec.ts';
import type { StopReason } from './command.ts';
import type { Ownership } from './owner.ts';
import { nonPreemptibleWaiting } from './lanes.ts';
import { leaseDeadline } from './guardian.ts';

export interface ControlTarget {
  spec: SpecRecord;
  attempt: number;
  phase(): StateRecord['phase'];
  bytes(): { stdout: number; stderr: number };
  progress(): string | null;
  stop(reason: StopReason): void;
}

export class ControlLoop {
  private readonly owner: Ownership;
  private readonly target: ControlTarget;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  /** The renewal instant last written (claimed_ms, then heartbeat_ms) and when that was, on the monotonic clock. */
  private lastRenewalMs: number;
  private lastRenewalMono: number;
  private lastPreemptCheckMono = Number.NEGATIVE_INFINITY;
  /** The claim was superseded (CLAIM-7): publish nothing more. */
  superseded = false;
  /** The lease could not be renewed, or lapsed, so the execution was stopped (LEASE-2, LEASE-6). */
  fenced = false;
  /**
   * performance.now() at the start of the last successful renewal, whatever
   * clock the context injects: the guardian's deadline is real time (LEASE-5).
   */
  private renewedReal: number;
  /** Called after each successful renewal, so that the guardian's deadline moves (LEASE-5). */
  onRenewed: (() => void) | undefined;

  constructor(owner: Ownership, target: ControlTarget) {
    this.owner = owner;
    this.target = target;
    this.lastRenewalMs = owner.claimedMs; // LEASE-1: claimed_ms is the first renewal
    const { clock } = owner.ctx;
    this.lastRenewalMono = monotonicMs(clock) - Math.max(0, clock.nowMs() - owner.claimedMs);
    this.renewedReal = owner.claimedReal;
  }

  /** The instant, on the guardian's clock, by which the execution must be stopped unless renewed (LEASE-5). */
  guardianDeadline(): number | undefined {
    return leaseDeadline(performance.now() - this.renewedReal, this.owner.ctx.leaseMs);
  }

  /**
   * LEASE-6 at the instant the execution is seen to end (its leader's status
   * collected, its handler returned): an execution that ended while this
   * process was stopped (its guardian stopped the group at the deadline) is a
   * counted failure whatever its status, when the lease lapsed meanwhile; a
   * lapse after that instant changes nothing. True when the generation is fenced.
   */
  settle(): boolean {
    if (!this.superseded && !this.fenced && this.lapsed()) this.fenced = true;
    return this.fenced;
  }

  private fence(): void {
    if (this.superseded || this.fenced) return;
    this.fenced = true;
    this.target.stop('superseded');
  }

  private sinceRenewal(): number {
    return monotonicMs(this.owner.ctx.clock) - this.lastRenewalMono;
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), CONTROL_POLL);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Whether lease_ms of the monotonic clock passed since the last successful renewal: nothing more may be published for this claim (RCPT-7, LEASE-2, LEASE-6). */
  lapsed(): boolean {
    return this.sinceRenewal() >= this.owner.ctx.leaseMs;
  }

  /** Renew the lease now (a payload handler's heartbeat()). */
  async renew(): Promise<void> {
    const t = this.target;
    if (this.fenced || this.lapsed()) {
      // LEASE-6: a lapsed lease is never renewed; the execution stops instead.
      this.fence();
      throw new FsjobError('IO', `the lease of generation ${this.owner.gen} lapsed (no renewal for ${this.owner.ctx.leaseMs} ms): the execution is stopped, not renewed (LEASE-6)`, { clause: 'LEASE-6' });
    }
    try {
      const bytes = t.bytes();
      const mono = monotonicMs(this.owner.ctx.clock);
      const real = performance.now();
      // LEASE-4: never earlier than the last renewal plus the time that really passed.
      const atMs = Math.max(this.owner.ctx.clock.nowMs(), this.lastRenewalMs + Math.round(mono - this.lastRenewalMono));
      this.lastRenewalMs = await this.owner.heartbeat({ phase: t.phase(), attempt: t.attempt, stdout_bytes: bytes.stdout, stderr_bytes: bytes.stderr, progress: t.progress() }, atMs);
      this.lastRenewalMono = mono;
      this.renewedReal = real;
      this.onRenewed?.();
    } catch (error) {
      if (isFsjobError(error, 'SUPERSEDED')) this.lose();
      throw error;
    }
  }

  private lose(): void {
    this.superseded = true;
    this.target.stop('superseded');
  }

  private async tick(): Promise<void> {
    if (this.busy || this.superseded) return;
    this.busy = true;
    const { owner, target } = this;
    // Each check fails on its own: a check that cannot be made now is made at the next tick.
    try {
      try {
        if (await owner.superseded()) {
          this.lose();
          return;
        }
      } catch {
        // judged again at the next tick
      }
      try {
        // CANCEL-3, in the directory the owner holds (a held handle needs no check per look).
        if ((await owner.handle.stat('cancel-force.json')) !== undefined) target.stop('force');
        else if ((await owner.handle.stat('cancel.json')) !== undefined) target.stop('cancel');
      } catch {
        // judged again at the next tick
      }
      if (this.sinceRenewal() >= renewInterval(owner.ctx.leaseMs)) {
        try {
          await this.renew();
        } catch {
          // LEASE-2: stop before the lease has passed since the last good renewal.
          if (this.sinceRenewal() >= owner.ctx.leaseMs - 2 * CONTROL_POLL) this.fence();
        }
      }
      const { spec } = target;
      const mono = monotonicMs(owner.ctx.clock);
      if (spec.preemptible && spec.lane !== null && mono - this.lastPreemptCheckMono >= CONTROL_LATENCY / 2) {
        this.lastPreemptCheckMono = mono;
        try {
          if (await nonPreemptibleWaiting(owner.ctx, owner.queue, spec.lane, owner.id, true)) target.stop('preempt');
        } catch {
          // judged again later
        }
      }
    } finally {
      this.busy = false;
    }
  }
}
