/**
 * Finishing a generation whose attempt is over, when the system refuses what
 * finishing needs: no descriptor left (EMFILE), a full disk, a read-only
 * queue, a /proc that cannot be read. The attempt's outcome exists only in
 * this owner (RCPT-7), so it is not thrown away on the first refusal:
 *
 * - proving the process group stopped (EXEC-11) and publishing the receipt or
 *   end record are tried again, with a growing pause (FINISH_RETRY_FIRST
 *   doubling up to FINISH_RETRY_MAX), never running the command again;
 * - they stop being tried once the window closes: the consumer shuts down, the
 *   claim is superseded (CLAIM-7, checked by every publish), or the lease has
 *   gone `lease_ms` without a successful renewal (RCPT-7, LEASE-2). The caller
 *   keeps renewing the lease meanwhile where it can; a record is tried for
 *   `lease_ms` from its first refusal at most (RCPT-7) even while renewals
 *   succeed, so that a queue which takes renewals but never the receipt (a
 *   job directory the owner may no longer write) does not keep a drain
 *   running forever;
 * - the first refusal is reported at once as a `pending` event naming what
 *   waits and why; giving up leaves the claim open for RECOV-1 and the worker
 *   reports the job as left unfinished.
 */
import { closeSync, openSync } from 'node:fs';
import { deadlineIn } from '../base/clock.ts';
import { errnoOf, isFsjobError, type FsjobError } from '../base/errors.ts';
import { descriptorAdvice } from '../base/descriptors.ts';
import { catchSoon, type Soon } from '../base/soon.ts';
import { stopGroup } from '../model/groups.ts';
import type { ProcessGroup } from '../model/identity.ts';
import type { Ownership } from './owner.ts';

/** First pause between two tries of a refused finishing step. */
export const FINISH_RETRY_FIRST = 500;
/** Longest pause between two tries. */
export const FINISH_RETRY_MAX = 5_000;

/** When an owner must stop trying to finish its generation. */
export interface FinishWindow {
  /** True once the consumer shuts down, the claim is superseded or the lease lapsed. */
  closed(): boolean;
}

/** A window of `lease_ms` from now (RCPT-7) for an owner that no longer renews, unless `giveUp` closes it first. */
export function leaseWindow(owner: Ownership, giveUp: () => boolean): FinishWindow {
  const passed = deadlineIn(owner.ctx.clock, owner.ctx.leaseMs);
  return { closed: () => giveUp() || passed() };
}

/** What is pending, for the `pending` event: "the receipt", "the end record", "the EXEC-11 proof". */
type Step = 'receipt' | 'end' | 'proof';

function pending(owner: Ownership, step: Step, reason: string, error?: FsjobError): void {
  owner.ctx.emit({ type: 'pending', queue: owner.queue.root, job_id: owner.id, gen: owner.gen, step, reason, ...(error === undefined ? {} : { error }) });
}

/**
 * RCPT-7: publish a receipt or end record, trying again while the window is
 * open when the filesystem refuses it (code IO). Throws the last refusal when
 * the window closes, and anything else at once (SUPERSEDED, EXISTS, ...).
 */
export async function persist<T>(owner: Ownership, step: 'receipt' | 'end', publish: () => Soon<T>, window: FinishWindow): Promise<T> {
  return await persistSoon(owner, step, publish, window);
}

/** persist, done before it returns when the first try is (a publish whose fsyncs ran inline), else its promise. */
export function persistSoon<T>(owner: Ownership, step: 'receipt' | 'end', publish: () => Soon<T>, window: FinishWindow): Soon<T> {
  return catchSoon(publish, (refusal) => tryAgain(owner, step, publish, window, refusal));
}

/** persist after the first try was refused with `refusal`. */
async function tryAgain<T>(owner: Ownership, step: 'receipt' | 'end', publish: () => Soon<T>, window: FinishWindow, refusal: unknown): Promise<T> {
  /** RCPT-7: "for up to lease_ms", counted from the first refusal. */
  const passed = deadlineIn(owner.ctx.clock, owner.ctx.leaseMs);
  let pause = FINISH_RETRY_FIRST;
  let error = refusal;
  for (let tries = 1; ; tries++) {
    // A job directory that is gone (ENOENT) can never take the record: no retry.
    const gone = isFsjobError(error) && (error.errno === 'ENOENT' || error.errno === 'ENOTDIR');
    if (!isFsjobError(error, 'IO') || gone || window.closed() || passed()) throw error;
    if (tries === 1) pending(owner, step, (error as FsjobError).message, error as FsjobError);
    await owner.ctx.clock.sleep(pause);
    pause = Math.min(pause * 2, FINISH_RETRY_MAX);
    try {
      return await publish();
    } catch (next) {
      error = next;
    }
  }
}

/**
 * EXEC-11 once more, for a group that could not be proven stopped when its
 * leader exited (its members could not be read, or one survived SIGKILL):
 * stop it again (TERM, the job's kill grace, KILL) until it is proven stopped
 * or the window closes. Returns whether it was proven stopped.
 */
export async function proveStoppedLater(owner: Ownership, group: ProcessGroup, graceMs: number, window: FinishWindow, first: string): Promise<boolean> {
  const cause = descriptorTrouble();
  pending(owner, 'proof', cause === undefined ? first : `${first}: ${cause}`);
  let pause = FINISH_RETRY_FIRST;
  while (!window.closed()) {
    await owner.ctx.clock.sleep(pause);
    pause = Math.min(pause * 2, FINISH_RETRY_MAX);
    try {
      if ((await stopGroup(group, { graceMs, clock: owner.ctx.clock })) === 'stopped') return true;
    } catch {
      // a signal the system refused: tried again after the next pause
    }
  }
  return false;
}

/**
 * Why the process table could not be read, when the reason is this process's
 * descriptors (groupState only says "unknown"): one open of /dev/null tells.
 */
function descriptorTrouble(): string | undefined {
  try {
    closeSync(openSync('/dev/null', 'r'));
    return undefined;
  } catch (error) {
    return descriptorAdvice(errnoOf(error));
  }
}
