/**
 * The queue-wide checks of dedupe keys and lanes (DEDUPE-1, DEDUPE-2,
 * LANE-1, LANE-2): the unfinished jobs of a key and the running jobs of a
 * lane against the highest hold of that key (queue.ts reads the holds).
 * The jobs were scanned before the holds were read: a job that would get a
 * finding is read again first, and one whose state moved meanwhile is no
 * evidence (doubt.ts, issue 19 point 8).
 */
import { keyHash, slotHash } from '../model/layout.ts';
import type { HoldRecord } from '../records/codec.ts';
import type { Sink } from './entries.ts';
import type { JobSummary } from './job-scan.ts';
import { finishedSince, movedSince } from './doubt.ts';

export interface Hold {
  n: number;
  record: HoldRecord | undefined;
  path: string;
}

/** Per-key holds: the highest number and its record, when it was valid. */
export type HoldIndex = Map<string, Hold>;

/** What the checks need of the audit. */
export interface KeyCheckContext {
  /** The queue root, to read a doubtful job again. */
  root: string;
  summaries: ReadonlyMap<string, JobSummary>;
  jobSink(id: string): Sink;
  shown(...parts: string[]): string;
}

/** DEDUPE-1: one unfinished job per key. DEDUPE-2: it holds the key's highest hold. */
export function checkDedupe(ctx: KeyCheckContext, holds: HoldIndex): void {
  const byKey = new Map<string, string[]>();
  for (const [id, summary] of ctx.summaries) {
    const key = summary.spec?.dedupe;
    if (summary.finished || key === undefined || key === null) continue;
    const list = byKey.get(key) ?? [];
    list.push(id);
    byKey.set(key, list);
  }
  for (const [key, seen] of byKey) {
    const hash = keyHash(key);
    const top = holds.get(hash);
    const doubt = seen.length > 1 || top === undefined || (top.record !== undefined && top.record.job_id !== seen[0]);
    const ids = doubt ? seen.filter((id) => !finishedSince(ctx.root, ctx.summaries.get(id) as JobSummary)) : seen;
    for (const id of ids) {
      const sink = ctx.jobSink(id);
      const shown = ctx.shown('jobs', id);
      if (ids.length > 1) {
        const others = ids.filter((other) => other !== id);
        sink.add('DEDUPE_CONFLICT', `job ${id} and ${others.length} other unfinished job${others.length === 1 ? '' : 's'} (${others.slice(0, 3).join(', ')}) share the dedupe key ${JSON.stringify(key)}`, shown, id);
      }
      if (top === undefined) {
        const where = ctx.shown('dedupe', hash);
        sink.add('DEDUPE_UNHELD', `job ${id} is unfinished with dedupe key ${JSON.stringify(key)} but ${where}/ holds no hold`, where, id);
      } else if (top.record !== undefined && top.record.job_id !== id && ids.length === 1) {
        sink.add('DEDUPE_UNHELD', `job ${id} is unfinished with dedupe key ${JSON.stringify(key)} but the highest hold ${top.path} names job ${top.record.job_id}`, top.path, id);
      }
    }
  }
}

/** The slot of its lane whose highest hold names this job's running generation (LANE-5, LANE-6), or undefined. */
function slotHeldBy(holds: HoldIndex, lane: string, slots: number, id: string, gen: number | undefined): number | undefined {
  for (let slot = 1; slot <= slots; slot++) {
    const record = holds.get(slotHash(lane, slot))?.record;
    if (record !== undefined && record.job_id === id && record.gen === gen) return slot;
  }
  return undefined;
}

/**
 * LANE-1, LANE-5: no more running jobs in a lane than its slots (one per
 * slot; as many as the largest lane_slots among them). LANE-2: a running job
 * holds the highest hold of one of its slots.
 */
export function checkLanes(ctx: KeyCheckContext, holds: HoldIndex, running: ReadonlySet<string>): void {
  const byLane = new Map<string, string[]>();
  for (const id of running) {
    const lane = ctx.summaries.get(id)?.spec?.lane;
    if (lane === undefined || lane === null) continue;
    const list = byLane.get(lane) ?? [];
    list.push(id);
    byLane.set(lane, list);
  }
  const slotsOf = (id: string): number => ctx.summaries.get(id)?.spec?.laneSlots ?? 1;
  for (const [lane, seen] of byLane) {
    const most = Math.max(...seen.map(slotsOf));
    const unheld = (id: string): boolean => slotHeldBy(holds, lane, slotsOf(id), id, ctx.summaries.get(id)?.open?.gen) === undefined;
    const doubt = seen.length > most || seen.some(unheld);
    const ids = doubt ? seen.filter((id) => !movedSince(ctx.root, ctx.summaries.get(id) as JobSummary)) : seen;
    for (const id of ids.sort()) {
      const sink = ctx.jobSink(id);
      const open = ctx.summaries.get(id)?.open;
      const shown = open?.execPath ?? ctx.shown('jobs', id);
      if (ids.length > most) {
        const others = ids.filter((other) => other !== id);
        const slots = most === 1 ? '' : ` (its jobs declare at most ${most} slots)`;
        sink.add('LANE_CONFLICT', `job ${id} runs in lane ${JSON.stringify(lane)}${slots} while ${others.slice(0, 3).join(', ')} ${others.length === 1 ? 'does' : 'do'} too`, shown, id);
      }
      if (!unheld(id)) continue;
      const hash = keyHash(lane);
      const top = holds.get(hash);
      if (slotsOf(id) > 1) {
        sink.add('LANE_UNHELD', `job ${id} runs generation ${open?.gen ?? '?'} in lane ${JSON.stringify(lane)} but no highest hold of its slots 1 to ${slotsOf(id)} names it (LANE-5)`, ctx.shown('lanes', hash), id);
      } else if (top === undefined) {
        const where = ctx.shown('lanes', hash);
        sink.add('LANE_UNHELD', `job ${id} runs in lane ${JSON.stringify(lane)} but ${where}/ holds no hold`, where, id);
      } else if (top.record !== undefined && ids.length === 1) {
        sink.add('LANE_UNHELD', `job ${id} runs generation ${open?.gen ?? '?'} in lane ${JSON.stringify(lane)} but the highest hold ${top.path} names job ${top.record.job_id} generation ${String(top.record.gen)}`, top.path, id);
      }
    }
  }
}
