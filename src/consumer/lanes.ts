/**
 * Whether a queued job of a lane may start now: LANE-4 (some slot it may use
 * is not held, LANE-5) and PREEMPT-2 (a preemptible job waits while a
 * non-preemptible job of its lane is queued). The running side asks
 * nonPreemptibleWaiting too, to stop a preemptible job for a waiting one
 * that finds every slot it may use held (PREEMPT-1, control.ts).
 */
import { currentHold, laneHeld, laneSlotsOf } from '../model/holds.ts';
import { deriveStatus, listJob } from '../model/job.ts';
import type { Queue } from '../model/queue.ts';
import { listReady } from '../model/ready.ts';
import type { SpecRecord } from '../records/codec.ts';
import type { Context, SpecView } from './context.ts';

/** LANE-2 for one slot: is its highest hold held? An unreadable highest hold counts as held: a lane is never taken on a guess. */
export async function slotHeld(ctx: Context, queue: Queue, lane: string, slot: number): Promise<boolean> {
  const hold = await currentHold(queue, 'lane', lane, slot);
  if (hold === undefined) return false;
  if (hold.hold === undefined) return true;
  return laneHeld(queue, hold.hold, { clock: ctx.clock, leases: ctx.leases });
}

/** LANE-4, LANE-5: is one of the slots `from` to the job's lane_slots free? */
async function someSlotFree(ctx: Context, queue: Queue, spec: SpecRecord & { lane: string }, from = 1): Promise<boolean> {
  for (let slot = from; slot <= laneSlotsOf(spec); slot++) {
    if (!(await slotHeld(ctx, queue, spec.lane, slot))) return true;
  }
  return false;
}

/** LANE-4 and PREEMPT-2 for a queued job with a valid spec. */
export async function mayStartNow(ctx: Context, queue: Queue, id: string, spec: SpecRecord): Promise<boolean> {
  if (spec.lane === null) return true;
  if (spec.preemptible && (await nonPreemptibleWaiting(ctx, queue, spec.lane, id))) return false;
  return someSlotFree(ctx, queue, { ...spec, lane: spec.lane });
}

/**
 * PREEMPT-1/2: is a non-preemptible job of `lane` waiting (queued: not
 * retrying, not cancelled)? For PREEMPT-1 (`slotsHeld`), a waiter counts only
 * when every slot it may use is held: slot 1 is the preemptible job's own, so
 * its slots from 2 are looked at (LANE-5).
 */
export async function nonPreemptibleWaiting(ctx: Context, queue: Queue, lane: string, exceptId: string, slotsHeld = false): Promise<boolean> {
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
      if (files.gated) continue;
      const view = await deriveStatus(queue, files, { clock: ctx.clock, leases: ctx.leases, spec: spec.spec });
      if (view.status !== 'queued') continue;
      if (!slotsHeld || !(await someSlotFree(ctx, queue, { ...spec.spec, lane }, 2))) return true;
    } catch {
      continue;
    }
  }
  return false;
}
