/**
 * Re-reading on doubt (issue 19 point 8). The audit may run while producers
 * and consumers work (its help says so), and it reads a queue in several
 * moments: the jobs first, the holds of dedupe/ and lanes/ later. A job seen
 * unfinished or running can have finished by the time the holds are read,
 * and the next job of its key taken the key's next hold: read naively, a
 * healthy queue then shows LANE_UNHELD, LANE_CONFLICT, DEDUPE_UNHELD or
 * HOLD_JOB_MISSING. So before such a finding is reported, the job is read
 * again: a job whose state moved since it was scanned is no evidence (the
 * next audit judges what it is now), while a job whose state did not move
 * was in it during the whole hold read, which makes the finding real.
 */
import { join } from 'node:path';
import { isFsjobError } from '../base/errors.ts';
import { listDirSync, lstatIfExistsSync } from '../fs/safefs.ts';
import { classifyJob } from '../model/job.ts';
import type { JobSummary } from './job-scan.ts';

/** A job as it is now: gone, finished, or unfinished with its open generation (none: 0). */
export type JobNow = { kind: 'gone' } | { kind: 'finished' } | { kind: 'unfinished'; open: number };

/** Reads the job again, open or gated (GATE-4's looks); undefined when it cannot be told (the finding then stands). */
export function jobNow(root: string, id: string): JobNow | undefined {
  for (const name of [id, `${id}.gated`, id]) {
    try {
      const now = classifyJob(id, listDirSync(join(root, 'jobs', name)));
      if (now.receipt) return { kind: 'finished' };
      return { kind: 'unfinished', open: now.gen === 0 || now.ends.has(now.gen) ? 0 : now.gen };
    } catch (error) {
      if (!isFsjobError(error, 'NOT_FOUND')) return undefined;
    }
  }
  return { kind: 'gone' };
}

/** Whether an unfinished job the scan saw is finished or gone now (DEDUPE-1, DEDUPE-2). */
export function finishedSince(root: string, seen: JobSummary): boolean {
  const now = jobNow(root, seen.id);
  return now !== undefined && now.kind !== 'unfinished';
}

/** Whether a job the scan saw running generation g runs another one, or none, now (LANE-1, LANE-2). */
export function movedSince(root: string, seen: JobSummary): boolean {
  const now = jobNow(root, seen.id);
  return now !== undefined && (now.kind !== 'unfinished' || now.open !== seen.open?.gen);
}

/** Whether a job a hold names exists now, published (jobs/<id>) or being staged (tmp/<id>): HOLD_JOB_MISSING's doubt. */
export function jobPresentNow(root: string, id: string): boolean {
  try {
    return ['jobs', 'tmp'].some((dir) => lstatIfExistsSync(join(root, dir, id)) !== undefined) || lstatIfExistsSync(join(root, 'jobs', `${id}.gated`)) !== undefined;
  } catch {
    return false;
  }
}

/** Whether ready/<name> exists now: READY_FINISHED's doubt. */
export function readyEntryPresentNow(root: string, name: string): boolean {
  try {
    return lstatIfExistsSync(join(root, 'ready', name)) !== undefined;
  } catch {
    return true;
  }
}
