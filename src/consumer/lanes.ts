/**
 * Whether a queued job of a lane may start now: LANE-4 (its lane is not
 * held) and PREEMPT-2 (a preemptible job waits while a non-preemptible job
 * of its lane is queued). The running side asks nonPreemptibleWaiting too,
 * to stop a preemptible job for a waiting one (PREEMPT-1, control.ts).
 */
import { currentHold, laneHeld } from '../model/holds.ts';
import { deriveStatus, listJob } from '../model/job.ts';
import type { Queue } from '../model/queue.ts';
import { listReady } from '../model/ready.ts';
import type { SpecRecord } from '../records/codec.ts';
import type { Context, SpecView } from './context.ts';

/** LANE-4 and PREEMPT-2 for a queued job with a valid spec. */
export async function mayStartNow(ctx: Context, queue: Queue, id: string, spec: SpecRecord): Promise<boolean> {
  if (spec.lane === null) return true;
  if (spec.preemptible && (await nonPreemptibleWaiting(ctx, queue, spec.lane, id))) return false;
  const hold = await currentHold(queue, 'lane', spec.lane);
  if (hold === undefined) return true;
  // An unreadable highest hold counts as held: a lane is never taken on a guess.
  if (hold.hold === undefined) return false;
  return !(await laneHeld(queue, hold.hold, { clock: ctx.clock, leases: ctx.leases }));
}

/**
 * PREEMPT-1/2: is a non-preemptible job of `lane` waiting (queued: not
 * retrying, not cancelled)?
 */
export async function nonPreemptibleWaiting(ctx: Context, queue: Queue, lane: string, exceptId: string): Promise<boolean> {
  for (const parsed of await listReady(queue)) {
    if (parsed.id === exceptId) continue;
    let spec: SpecView | undefined;
    try {
      spec = await ctx.specs.get(queue, parsed.id);
    } catch {
      continue;
    }
    if (spec === undefined || !spec.ok || spec.spec.lane !== lane || spec.spec.preemptible) continue;
    try {
      const files = await listJob(queue, parsed.id);
      const view = await deriveStatus(queue, files, { clock: ctx.clock, leases: ctx.leases, spec: spec.spec });
      if (view.status === 'queued') return true;
    } catch {
      continue;
    }
  }
  return false;
}
