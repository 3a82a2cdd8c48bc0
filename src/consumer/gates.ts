/**
 * A consumer's look at gated jobs (spec/gates.md) while it chooses a job.
 *
 * A gated job's ready entry is walked like any other (READY-1), but the job
 * is never claimed while gated (GATE-2). AFTER-4: the consumer looks at it
 * and opens its gate when GATE-3 allows; a job that can never run gets its
 * cancel record first (AFTER-3) and is then decided as any job is.
 *
 * What a look found blocked is remembered per view of ready/, so that the
 * next scans pass the job over without a system call:
 * - blocked on a dependency: while that dependency's ready entry is in the
 *   view (READY-2 removes it only after the dependency's receipt);
 * - held (or of a newer minor): until the view is listed again, or a watch
 *   event of jobs/ names the job's open name (its gate opened elsewhere).
 * A deep backlog of gated jobs then costs one map lookup per job and scan.
 *
 * The dependencies blocked jobs await are noted too, so that a watch event
 * of one's ready entry wakes a listening consumer (queue-watch.ts): READY-2
 * removes the entry after the receipt, and a job finished by a consumer that
 * does not look again (a `--once` worker, another implementation) would
 * otherwise wait for the next poll.
 */
import { publishCancelRequest } from '../model/cancel-request.ts';
import { gateFacts, gateVerdict, openGate } from '../model/gates.ts';
import { readyEntryId } from '../model/layout.ts';
import { locateJob, type Queue } from '../model/queue.ts';
import type { Context } from './context.ts';
import type { ReadyView } from './ready-view.ts';

interface Blocked {
  /** The pending dependency whose ready entry keeps this job passed over. */
  awaiting?: string;
  /** Held or newer: passed over until the view is listed again (its listedAtMs then). */
  listedAtMs?: number;
}

const memos = new WeakMap<ReadyView, Map<string, Blocked>>();
/** Per view: the ids of the dependencies its blocked jobs await. */
const awaited = new WeakMap<ReadyView, Set<string>>();

function memoOf(view: ReadyView): Map<string, Blocked> {
  let memo = memos.get(view);
  if (memo === undefined) {
    memo = new Map();
    memos.set(view, memo);
  }
  return memo;
}

/** AFTER-4's pass without a system call: true while the look that found `id` blocked still stands. */
export function passOverGated(view: ReadyView, id: string): boolean {
  const blocked = memos.get(view)?.get(id);
  if (blocked === undefined) return false;
  if (blocked.awaiting !== undefined ? view.hasId(blocked.awaiting) : blocked.listedAtMs === view.listedAtMs) return true;
  memos.get(view)?.delete(id);
  // Its dependency's entry went: no longer awaited (a job still blocked on it is noted again at its look).
  if (blocked.awaiting !== undefined) awaited.get(view)?.delete(blocked.awaiting);
  return false;
}

/**
 * A watch event of ready/ named `name`: true when it is the entry of a job a
 * blocked job awaits, whose receipt may have come (READY-2): look now. One
 * lookup per event, none while no job is blocked; an event of the entry's
 * creation wakes a look that finds the job still blocked, nothing worse.
 */
export function awaitedEntryChanged(view: ReadyView, name: string): boolean {
  const ids = awaited.get(view);
  if (ids === undefined || ids.size === 0) return false;
  const id = readyEntryId(name);
  return id !== undefined && ids.has(id);
}

/** A watch event of jobs/ named `name`: if it is a job's open name, its gate may have opened: look again. */
export function gateMayHaveOpened(view: ReadyView, name: string): void {
  memos.get(view)?.delete(name);
}

/**
 * GATE-3, AFTER-3, AFTER-4 for a job whose ready entry names no open
 * directory: `opened` when its gate is open now (by this look or another's:
 * claim it as any job), `pass` when it stays gated (held, blocked, newer),
 * `missing` when it exists under neither name (GATE-4).
 */
export async function lookAtGated(ctx: Context, queue: Queue, id: string, view: ReadyView): Promise<'opened' | 'pass' | 'missing'> {
  const place = await locateJob(queue, id);
  if (place !== 'gated') return place === 'open' ? 'opened' : 'missing';
  const spec = await ctx.specs.get(queue, id, true);
  if (spec === undefined) return (await locateJob(queue, id)) === 'open' ? 'opened' : 'missing';
  const verdict = await gateVerdict(queue, spec.ok ? spec.spec : undefined, await gateFacts(queue, id));
  switch (verdict.kind) {
    case 'held':
    case 'newer':
      memoOf(view).set(id, { listedAtMs: view.listedAtMs });
      return 'pass';
    case 'blocked': {
      memoOf(view).set(id, { awaiting: verdict.awaiting });
      let ids = awaited.get(view);
      if (ids === undefined) awaited.set(view, (ids = new Set()));
      ids.add(verdict.awaiting);
      return 'pass';
    }
    case 'cancel':
      // AFTER-3: the cancel record first, so that every claimer, a 1.1 one too, ends the job unrun.
      try {
        await publishCancelRequest(queue, queue.paths.gatedJob(id), id, { force: false, reason: verdict.reason, by: ctx.self, clock: ctx.clock });
      } catch (error) {
        if ((await locateJob(queue, id)) !== 'open') throw error;
        return 'opened'; // opened meanwhile: the job is decided at jobs/<id> as any job is
      }
      ctx.emit({ type: 'skipped', queue: queue.root, job_id: id, reason: `cancelled: ${verdict.reason}` });
      break;
    case 'open':
      break;
  }
  await openGate(queue, id, spec.ok ? spec.spec.priority : 0);
  return 'opened';
}
