/**
 * Choosing the next job (section 7.2) and keeping the ready index whole
 * (section 6.3).
 *
 * Order: ascending byte order of ready entry names, which is priority, then
 * enqueue order (LAYOUT-7, CLAIM-1); the first job this consumer can claim
 * is claimed (CLAIM-2), except that a job whose lane is held is passed over
 * (LANE-4) and so is a preemptible job while a non-preemptible job of its
 * lane waits (PREEMPT-2). The index is a hint (READY-1): every entry is
 * verified against the job directory before anything is done to the job.
 */
import { TEMP_MAX_AGE } from '../base/constants.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { CLAIMABLE, deriveStatus, listJob, type JobFiles } from '../model/job.ts';
import { isJobId, parseReadyEntry } from '../model/layout.ts';
import type { Queue } from '../model/queue.ts';
import type { SpecRecord } from '../records/codec.ts';
import { createExclusive, entryPresent, listDir, removeTree, statEntry } from '../fs/safefs.ts';
import { claimJob, type ClaimPolicy, type ClaimResult } from './claim.ts';
import type { Context, SpecView } from './context.ts';
import { mayStartNow } from './lanes.ts';
import { readyName } from './owner.ts';

export interface SelectFilter {
  /** Jobs this consumer owns right now (CLAIM-8) or keeps away from for a while. */
  skip(id: string): boolean;
  /** Whether this consumer can run the job at all: a handler, commands allowed (CLAIM-2). */
  canRun(spec: SpecRecord): boolean;
}

export interface SelectResult {
  /** A job claimed and either decided (a receipt or end published) or ready to run; null when none. */
  result: (ClaimResult & { kind: 'decided' | 'run' }) | null;
  /** The earliest retry_at_ms of a retrying job this consumer could run, or null. */
  retryAtMs: number | null;
  /**
   * The shortest time a watched foreign claim needs before it may be broken
   * (LEASE-3), or null: a draining consumer waits for it (MANIFEST-4).
   */
  watchMs: number | null;
}

function wrap(error: unknown): FsjobError {
  return error instanceof FsjobError ? error : new FsjobError('IO', error instanceof Error ? error.message : String(error), { cause: error });
}

/** CLAIM-1/2: claim the first job in order that this consumer can make progress on. */
export async function claimNextIn(ctx: Context, queue: Queue, filter: SelectFilter, policy: ClaimPolicy, avoid: (id: string, ms: number) => void): Promise<SelectResult> {
  let retryAtMs: number | null = null;
  let watchMs: number | null = null;
  const readyDir = queue.paths.dir('ready');
  for (const entry of await listDir(readyDir, queue.fsOptions)) {
    const parsed = parseReadyEntry(entry.name);
    if (parsed === undefined || filter.skip(parsed.id)) continue;
    const id = parsed.id;
    try {
      const spec = await ctx.specs.get(queue, id);
      if (spec === undefined) {
        await removeStaleEntry(queue, entry.name, ctx.clock.nowMs());
        continue;
      }
      if (spec.ok && !filter.canRun(spec.spec)) continue;
      const files = await listJob(queue, id);
      const view = await deriveStatus(queue, files, { clock: ctx.clock, leases: ctx.leases, ...(spec.ok ? { spec: spec.spec } : {}) });
      if (view.status === 'retrying') {
        const at = view.end?.retry_at_ms ?? 0;
        retryAtMs = retryAtMs === null ? at : Math.min(retryAtMs, at);
        continue;
      }
      const watch = view.owner?.watchRemainingMs;
      if (watch !== undefined) watchMs = watchMs === null ? watch : Math.min(watchMs, watch);
      if (!CLAIMABLE.has(view.status) && view.status !== 'finished') continue;
      if (spec.ok && view.status === 'queued' && !(await mayStartNow(ctx, queue, id, spec.spec))) continue;
      const result = await claimJob(ctx, queue, id, spec, files, view, policy);
      switch (result.kind) {
        case 'decided':
        case 'run':
          return { result, retryAtMs, watchMs };
        case 'unproven':
          ctx.emit({ type: 'unproven', queue: queue.root, job_id: id, gen: result.gen, clause: result.clause, reason: result.reason });
          avoid(id, 30_000);
          break;
        case 'limit':
          ctx.emit({ type: 'skipped', queue: queue.root, job_id: id, reason: `claim generation ${result.gen} is GEN_MAX: no further claim is possible (CLAIM-4)` });
          avoid(id, 3_600_000);
          break;
        default:
          break;
      }
    } catch (error) {
      // One job's trouble (a planted symlink, EACCES) must not stop the queue.
      ctx.emit({ type: 'error', queue: queue.root, job_id: id, error: wrap(error) });
      avoid(id, 5_000);
    }
  }
  return { result: null, retryAtMs, watchMs };
}

/** READY-3: an entry whose job directory does not exist goes once it is older than TEMP_MAX_AGE. */
async function removeStaleEntry(queue: Queue, name: string, nowMs: number): Promise<boolean> {
  const entryPath = `${queue.paths.dir('ready')}/${name}`;
  const info = await statEntry(entryPath, queue.fsOptions);
  if (info === undefined || nowMs - info.mtimeMs <= TEMP_MAX_AGE) return false;
  return removeTree(entryPath, queue.fsOptions);
}

/** How many receipt lstats rebuildReady keeps in flight (the libuv pool has 4 threads by default). */
const REBUILD_BATCH = 64;

/**
 * READY-4: every job directory without a receipt gets a ready entry. A full
 * scan of jobs/, done when a consumer starts and by recover. Returns the ids
 * whose entries were created.
 *
 * Finished jobs, the bulk of a long-lived queue, cost one lstat each: a
 * receipt.json entry of any kind makes a job finished (STATUS-1), which is
 * all listJob would have told. Only the jobs left (no ready entry, no
 * receipt) are listed with the full checks. The lstats run REBUILD_BATCH at a
 * time: 100,000 finished jobs took 140 s to start with a listJob each.
 */
export async function rebuildReady(ctx: Context, queue: Queue): Promise<string[]> {
  const present = new Set<string>();
  for (const entry of await listDir(queue.paths.dir('ready'), queue.fsOptions)) {
    const parsed = parseReadyEntry(entry.name);
    if (parsed !== undefined) present.add(parsed.id);
  }
  const jobsDir = queue.paths.dir('jobs');
  // LAYOUT-4: anything else in jobs/ is foreign: never opened.
  const candidates = (await listDir(jobsDir, queue.fsOptions)).filter((entry) => entry.kind === 'dir' && isJobId(entry.name) && !present.has(entry.name)).map((entry) => entry.name);
  const rebuilt: string[] = [];
  for (let start = 0; start < candidates.length; start += REBUILD_BATCH) {
    const batch = candidates.slice(start, start + REBUILD_BATCH);
    // A failed lstat reads as "no receipt": the job then gets the full look below, as before.
    const finished = await Promise.all(batch.map((id) => entryPresent(`${jobsDir}/${id}/receipt.json`, queue.fsOptions).catch(() => false)));
    for (const [index, id] of batch.entries()) {
      if (finished[index] !== true && (await rebuildEntry(ctx, queue, id))) rebuilt.push(id);
    }
  }
  return rebuilt;
}

/** The ready entry of one job that has none and no receipt (READY-4); true when it was created. */
async function rebuildEntry(ctx: Context, queue: Queue, id: string): Promise<boolean> {
  let files: JobFiles;
  try {
    files = await listJob(queue, id);
  } catch {
    return false;
  }
  if (files.receipt) return false;
  let spec: SpecView | undefined;
  try {
    spec = await ctx.specs.get(queue, id);
  } catch {
    spec = undefined;
  }
  // An invalid spec still needs an entry, so that a consumer rejects the job.
  const name = readyName(spec?.ok === true ? spec.spec : undefined, id);
  try {
    const handle = await createExclusive(queue.paths.dir('ready'), name, undefined, queue.fsOptions);
    await handle.close();
    return true;
  } catch (error) {
    if (!isFsjobError(error, 'EXISTS')) throw error;
    return false;
  }
}
