/**
 * Garbage collection (spec/recovery-and-gc.md). Only finished jobs are removed (GC-1): a
 * job is removed only when its receipt exists and is a valid record, and the
 * removal is a rename out of jobs/ (the job disappears atomically), an fsync
 * of jobs/, then the removal of the renamed tree inside tmp/. A crash after
 * the rename leaves a `.gc-*` tree in tmp/ that a later gc removes as a
 * stale temporary (TEMP-1). Besides jobs, gc removes what GC-2 and READY-3
 * let anyone remove: ready entries of finished jobs, holds below the highest
 * of their key, and tmp/ entries older than TEMP_MAX_AGE.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { checkBoolean, checkCount, checkDuration, checkFunction, checkMethods, checkOptionsObject, checkStrings } from '../base/option-checks.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { isJobId, tmpEntryJobId } from '../model/layout.ts';
import { staleReadyEntries } from '../model/ready.ts';
import { listDir, removeTree, renameNoReplace, statEntry } from '../fs/safefs.ts';
import { readRecord } from '../records/codec.ts';
import { TEMP_MAX_AGE } from '../base/constants.ts';
import { assertQueue, locateJob, type Queue } from '../model/queue.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import { GATED_SUFFIX, KEY_HASH_PATTERN, jobIdOfDirName, parseHoldNumber } from '../records/names.ts';

/** Options of `gc` (spec/recovery-and-gc.md): which finished jobs to keep. */
export interface GcOptions {
  /** Keep this many finished jobs, the most recently finished. @default 0 */
  keep?: number;
  /** Remove only jobs that finished at least this long ago. @default 0 */
  olderThanMs?: number;
  /** Report what would be removed without removing anything. @default false */
  dryRun?: boolean;
  /**
   * Only these jobs (`fsjob gc ID`): each is removed if it is finished, else
   * listed in `skipped` with why; `keep` and `olderThanMs` still apply.
   * @default every finished job
   */
  ids?: readonly string[];
  /** @default systemClock */
  clock?: Clock;
  /** Called as jobs are examined (their receipts read) and then as the doomed ones are removed, for a progress display. */
  onProgress?: (progress: GcProgress) => void;
}

/** How far a gc is: `done` of `total` jobs examined, then removed. */
export interface GcProgress {
  phase: 'examining' | 'removing';
  done: number;
  total: number;
}

/** What `gc` removed, kept and left alone. */
export interface GcResult {
  /** Finished jobs removed (GC-1), oldest first. */
  jobs: string[];
  /** Ready entries removed (READY-3). */
  readyEntries: string[];
  /** Hold files removed, as `dedupe/<h>/<n>.json` or `lanes/<h>/<n>.json` (GC-2). */
  holds: string[];
  /** Stale entries of tmp/ removed (TEMP-1). */
  temps: string[];
  /** Finished jobs kept by `keep` or `olderThanMs`. */
  kept: number;
  /** Jobs left alone although they have a receipt.json, and why. */
  skipped: { id: string; reason: string }[];
  /**
   * What could not be examined or removed (an IO error: EACCES, EIO, EROFS):
   * the job (or, with id null, the index sweep) is left where it was and the
   * rest is collected.
   */
  failed: { id: string | null; path: string; errno: string | null; reason: string }[];
}

async function mtimeOf(queue: Queue, target: string): Promise<number | undefined> {
  try {
    return (await statEntry(target, queue.fsOptions))?.mtimeMs;
  } catch {
    return undefined;
  }
}

async function exists(queue: Queue, target: string): Promise<boolean> {
  return (await mtimeOf(queue, target)) !== undefined;
}

interface Finished {
  id: string;
  finishedMs: number;
}

/** Finished jobs (valid receipt, GC-1), and jobs with a receipt.json that is not a valid receipt; with `only`, just those jobs. */
async function finishedJobs(queue: Queue, only: readonly string[] | undefined, onProgress?: GcOptions['onProgress']): Promise<{ finished: Finished[]; skipped: GcResult['skipped']; failed: GcResult['failed'] }> {
  const finished: Finished[] = [];
  const skipped: GcResult['skipped'] = [];
  const failed: GcResult['failed'] = [];
  let ids: string[];
  if (only === undefined) {
    // Foreign names are never opened (LAYOUT-4).
    ids = (await listDir(queue.paths.dir('jobs'), queue.fsOptions)).filter((entry) => entry.kind === 'dir' && isJobId(entry.name)).map((entry) => entry.name);
  } else {
    for (const id of only) if (!isJobId(id)) throw new FsjobError('USAGE', `${JSON.stringify(id)} is not a job id (LAYOUT-4)`, { clause: 'LAYOUT-4' });
    ids = [...new Set(only)];
  }
  let examined = 0;
  for (const id of ids) {
    onProgress?.({ phase: 'examining', done: examined++, total: ids.length });
    if (only !== undefined && !(await exists(queue, queue.paths.job(id)))) {
      const gated = (await locateJob(queue, id)) === 'gated';
      skipped.push({ id, reason: gated ? 'it is not finished (it is gated: held, or waiting for its dependencies); gc removes only finished jobs' : 'no such job (removed already, or never published here)' });
      continue;
    }
    let read;
    try {
      read = await readRecord(queue.paths.jobFile(id, 'receipt.json'), 'receipt', { ...queue.fsOptions, expectedJobId: id, allowMissing: true });
    } catch (error) {
      if (isFsjobError(error, 'NOT_FOUND')) continue; // removed meanwhile
      // One job that cannot be read (a directory of mode 0000: EACCES) never stops the collection of the others (I7).
      if (!isFsjobError(error, 'IO')) throw error;
      failed.push(failure(id, queue.paths.job(id), error));
      continue;
    }
    if (read === undefined) {
      // Unfinished: never removed (GC-1).
      if (only !== undefined) skipped.push({ id, reason: 'it is not finished (no receipt); gc removes only finished jobs: cancel it first, then gc it once it has its receipt' });
      continue;
    }
    if (read.ok) finished.push({ id, finishedMs: read.value.finished_ms });
    else skipped.push({ id, reason: `receipt.json is not a valid receipt: ${read.findings[0]?.message ?? 'invalid'}` });
  }
  return { finished, skipped, failed };
}

function failure(id: string | null, where: string, error: FsjobError): GcResult['failed'][number] {
  return { id, path: error.path ?? where, errno: error.errno ?? null, reason: error.message };
}

/** GC-3: the jobs gated jobs name in `after`, each with one job that waits for it. */
async function dependenciesOfGated(queue: Queue): Promise<Map<string, string>> {
  const needed = new Map<string, string>();
  for (const entry of await listDir(queue.paths.dir('jobs'), queue.fsOptions)) {
    const id = entry.kind === 'dir' && entry.name.endsWith(GATED_SUFFIX) ? jobIdOfDirName(entry.name) : undefined;
    if (id === undefined) continue;
    const read = await readRecord(`${queue.paths.gatedJob(id)}/spec.json`, 'spec', { ...queue.fsOptions, expectedJobId: id, allowMissing: true }).catch(() => undefined);
    if (read?.ok !== true) continue;
    for (const dependency of read.value.after ?? []) needed.set(dependency.job_id, id);
  }
  return needed;
}

/** GC-1 for one job: rename into tmp/ (atomic disappearance, jobs/ fsynced by renameNoReplace), then remove the tree. */
async function removeJob(queue: Queue, id: string): Promise<boolean> {
  const grave = path.join(queue.paths.dir('tmp'), `.gc-${id}-${randomBytes(8).toString('hex')}`);
  try {
    await renameNoReplace(queue.paths.job(id), grave, queue.fsOptions);
  } catch (error) {
    if (isFsjobError(error, 'NOT_FOUND')) return false; // another gc got there first
    throw error;
  }
  await removeTree(grave, queue.fsOptions);
  return true;
}

/** GC-2: every hold numbered below the highest of its key (LANE-3: the highest is never removed). */
async function lowerHolds(queue: Queue): Promise<string[]> {
  const lower: string[] = [];
  for (const kind of ['dedupe', 'lanes'] as const) {
    for (const keyDir of await listDir(queue.paths.dir(kind), queue.fsOptions)) {
      if (keyDir.kind !== 'dir' || !KEY_HASH_PATTERN.test(keyDir.name)) continue;
      const numbers: number[] = [];
      let entries;
      try {
        entries = await listDir(path.join(queue.paths.dir(kind), keyDir.name), queue.fsOptions);
      } catch (error) {
        // SEC-5, SEC-6: a key directory readers refuse is left alone (validate reports it); the other keys are still collected.
        if (isFsjobError(error) && error.code !== 'IO') continue;
        throw error;
      }
      for (const entry of entries) {
        const n = entry.kind === 'file' && entry.name.endsWith('.json') ? parseHoldNumber(entry.name.slice(0, -'.json'.length)) : undefined;
        if (n !== undefined) numbers.push(n);
      }
      const top = Math.max(0, ...numbers);
      for (const n of numbers) if (n < top) lower.push(`${kind}/${keyDir.name}/${n}.json`);
    }
  }
  return lower;
}

/**
 * TEMP-1: entries of tmp/ not modified for TEMP_MAX_AGE (dead producers'
 * staging, interrupted gc trees), except one named after a job jobs/ still
 * holds (TEMP-2): after a power loss it may be that job's own directory.
 */
async function staleTemps(queue: Queue, now: number): Promise<string[]> {
  const tmp = queue.paths.dir('tmp');
  const stale: string[] = [];
  for (const entry of await listDir(tmp, queue.fsOptions)) {
    const named = tmpEntryJobId(entry.name);
    if (named !== undefined && (await locateJob(queue, named)) !== 'missing') continue;
    const mtime = await mtimeOf(queue, path.join(tmp, entry.name));
    if (mtime !== undefined && now - mtime > TEMP_MAX_AGE) stale.push(entry.name);
  }
  return stale;
}

/**
 * Remove finished jobs except the `keep` most recently finished and those
 * that finished less than `olderThanMs` ago; then the ready entries, holds
 * and temporaries nobody needs. Never touches an unfinished job (GC-1).
 * Returns what it removed (or, with `dryRun`, what it would remove).
 */
export async function gc(queue: Queue, options: GcOptions = {}): Promise<GcResult> {
  assertQueue(queue, 'gc');
  // Checked as a JavaScript caller may pass them (base/option-checks.ts): gc removes jobs, so nothing is guessed.
  checkOptionsObject(options, 'gc');
  checkCount(options, 'gc', 'keep', 0, false);
  checkDuration(options, 'gc', 'olderThanMs', 0, false);
  checkBoolean(options, 'gc', 'dryRun');
  checkStrings(options, 'gc', 'ids');
  checkMethods(options, 'gc', 'clock', ['nowMs', 'sleep']);
  checkFunction(options, 'gc', 'onProgress');
  const clock = options.clock ?? systemClock;
  const keep = options.keep ?? 0;
  const olderThanMs = options.olderThanMs ?? 0;
  const dryRun = options.dryRun ?? false;
  const now = clock.nowMs();

  const { finished, skipped, failed } = await finishedJobs(queue, options.ids, options.onProgress);
  // Most recently finished first; the id breaks ties (enqueue order).
  finished.sort((a, b) => b.finishedMs - a.finishedMs || (a.id < b.id ? 1 : -1));
  const needed = await dependenciesOfGated(queue);
  const doomed = finished.slice(keep).filter((job) => now - job.finishedMs >= olderThanMs);
  doomed.reverse(); // oldest first
  // GC-3: a job a gated job runs after keeps its receipt until that job's gate is open.
  for (const job of doomed.filter((candidate) => needed.has(candidate.id))) {
    skipped.push({ id: job.id, reason: `gated job ${needed.get(job.id) ?? ''} runs after it: kept until its gate opens (GC-3)` });
  }
  doomed.splice(0, doomed.length, ...doomed.filter((job) => !needed.has(job.id)));

  const jobs: string[] = [];
  let removing = 0;
  for (const job of doomed) {
    options.onProgress?.({ phase: 'removing', done: removing++, total: doomed.length });
    try {
      if (dryRun || (await removeJob(queue, job.id))) jobs.push(job.id);
    } catch (error) {
      // A job whose directory may not be moved (mode 0500: EACCES) is reported; the other jobs still go.
      if (!isFsjobError(error, 'IO')) throw error;
      failed.push(failure(job.id, queue.paths.job(job.id), error));
    }
  }
  const removed = new Set(jobs);

  // READY-3: the jobs removed above (or, in a dry run, that would be) count as finished.
  const readyEntries = await staleReadyEntries(queue, now, removed).catch((error: unknown) => {
    if (!isFsjobError(error, 'IO')) throw error;
    failed.push(failure(null, queue.paths.dir('ready'), error));
    return [];
  });
  const holds = await lowerHolds(queue);
  const temps = await staleTemps(queue, now);
  if (!dryRun) {
    const gone = async (target: string): Promise<void> => void (await removeTree(target, queue.fsOptions).catch(() => undefined));
    for (const name of readyEntries) await gone(path.join(queue.paths.dir('ready'), name));
    for (const hold of holds) await gone(path.join(queue.root, hold));
    for (const name of temps) await gone(path.join(queue.paths.dir('tmp'), name));
  }
  return { jobs, readyEntries, holds, temps, kept: finished.length - doomed.length, skipped, failed };
}
