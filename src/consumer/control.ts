/**
 * The control loop of a running attempt: every CONTROL_POLL (well inside
 * CONTROL_LATENCY) it checks, in this order,
 *
 * 1. ownership (CLAIM-7): `claim.<g+1>.json` exists → stop at once (OWN-1);
 * 2. cancel records (CANCEL-3): `cancel-force.json` → kill, `cancel.json` → TERM;
 * 3. the lease (LEASE-1): renew by publishing `state.<g>.json` every
 *    RENEW_INTERVAL; an owner that cannot renew stops its execution before
 *    the lease runs out (LEASE-2);
 * 4. preemption (PREEMPT-1): a preemptible job of a lane stops when a
 *    non-preemptible job of that lane waits.
 */
import { CONTROL_LATENCY, CONTROL_POLL, renewInterval } from '../core/constants.ts';
import { isFsjobError } from '../core/errors.ts';
import type { SpecRecord, StateRecord } from '../core/records.ts';
import { statEntry } from '../core/safefs.ts';
import type { StopReason } from './command.ts';
import type { Ownership } from './owner.ts';
import { nonPreemptibleWaiting } from './select.ts';

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
  private lastRenewalMs: number;
  private lastPreemptCheckMs = 0;
  /** The claim was superseded (CLAIM-7): publish nothing more. */
  superseded = false;
  /** The lease could not be renewed, so the execution was stopped (LEASE-2). */
  fenced = false;

  constructor(owner: Ownership, target: ControlTarget) {
    this.owner = owner;
    this.target = target;
    this.lastRenewalMs = owner.claimedMs; // LEASE-1: claimed_ms is the first renewal
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), CONTROL_POLL);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Renew the lease now (a payload handler's heartbeat()). */
  async renew(): Promise<void> {
    const t = this.target;
    try {
      const bytes = t.bytes();
      this.lastRenewalMs = await this.owner.heartbeat({ phase: t.phase(), attempt: t.attempt, stdout_bytes: bytes.stdout, stderr_bytes: bytes.stderr, progress: t.progress() });
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
    const now = owner.ctx.clock.nowMs();
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
        if ((await statEntry(owner.path('cancel-force.json'), owner.queue.fsOptions)) !== undefined) target.stop('force');
        else if ((await statEntry(owner.path('cancel.json'), owner.queue.fsOptions)) !== undefined) target.stop('cancel');
      } catch {
        // judged again at the next tick
      }
      if (now - this.lastRenewalMs >= renewInterval(owner.ctx.leaseMs)) {
        try {
          await this.renew();
        } catch {
          // LEASE-2: stop before the lease has passed since the last good renewal.
          if (!this.superseded && owner.ctx.clock.nowMs() - this.lastRenewalMs >= owner.ctx.leaseMs - 2 * CONTROL_POLL) {
            this.fenced = true;
            target.stop('superseded');
          }
        }
      }
      const { spec } = target;
      if (spec.preemptible && spec.lane !== null && now - this.lastPreemptCheckMs >= CONTROL_LATENCY / 2) {
        this.lastPreemptCheckMs = now;
        try {
          if (await nonPreemptibleWaiting(owner.ctx, owner.queue, spec.lane, owner.id)) target.stop('preempt');
        } catch {
          // judged again later
        }
      }
    } finally {
      this.busy = false;
    }
  }
}
