/**
 * Releasing held jobs (spec/gates.md, HOLD-2): `fsjob release ID...`, also
 * every held job of a lane or with a label.
 *
 * The release is a write-once record, release.json, published by link in
 * jobs/<id>.gated/ (HOLD-2): if it stands already, releasing again succeeds.
 * Then the gate opens at once when GATE-3 allows (every dependency
 * satisfied); otherwise the job waits gated for its dependencies, and a
 * consumer opens its gate when they are (AFTER-4).
 */
import { checkMethods, checkOptionsObject, checkString, checkStringRecord, describe } from '../base/option-checks.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import { PROTOCOL_VERSION } from '../base/constants.ts';
import { publishRecord } from '../fs/safefs.ts';
import { gateFacts, gateVerdict, openGate } from '../model/gates.ts';
import { selfIdentity } from '../model/identity.ts';
import { jobIdOfDirName } from '../records/names.ts';
import { assertQueue, type Queue } from '../model/queue.ts';
import { encodeRecord, type ReleaseRecord } from '../records/codec.ts';
import type { JobFiles } from '../model/job.ts';
import { findJob, readSpec } from './jobs.ts';

/** Options of `release`. */
export interface ReleaseOptions {
  /** @default systemClock */
  clock?: Clock;
}

/** What `release` did for one job. */
export interface ReleaseResult {
  id: string;
  /** False when the job was released already (release.json stood, or its gate is open): still a success (HOLD-2). */
  published: boolean;
  /** `open`: its gate is open, it waits like any queued job; `waiting`: it still waits, gated, for `waitingFor`. */
  next: 'open' | 'waiting';
  /** Why it still waits: a dependency (AFTER-1), or one that can never be satisfied (a consumer cancels it, AFTER-3). */
  waitingFor: string | null;
}

async function specOf(queue: Queue, files: JobFiles, id: string) {
  if (files.receipt) {
    throw new FsjobError('FINISHED', `job ${id} already finished; there is nothing to release (HOLD-2)`, { jobId: id, path: `${files.dir}/receipt.json`, clause: 'HOLD-2' });
  }
  const spec = await readSpec(queue, files);
  if (spec === undefined) {
    throw new FsjobError('INVALID_RECORD', `job ${id} has no valid spec.json, so whether it is held cannot be read (fsjob validate shows why); cancel it instead`, {
      jobId: id,
      path: `${files.dir}/spec.json`,
      clause: 'HOLD-1',
    });
  }
  if (spec.hold !== true) {
    const what = files.gated ? 'it waits for its dependencies (AFTER-1), not for a release' : 'no release ever held it back (it may be queued, running or retrying as any job)';
    throw new FsjobError('NOT_HELD', `job ${id} was not enqueued held, so it cannot be released: ${what} (HOLD-1)`, { jobId: id, clause: 'HOLD-1' });
  }
  return spec;
}

/** ReleaseOptions as a JavaScript caller may pass them (base/option-checks.ts). */
function checkReleaseOptions(options: unknown, caller: string): void {
  checkOptionsObject(options, caller);
  if (options !== undefined) checkMethods(options, caller, 'clock', ['nowMs', 'sleep']);
}

/**
 * HOLD-2: release the held job `id`. Throws NOT_FOUND for no such job,
 * FINISHED for a finished one, NOT_HELD for a job that was never held.
 */
export async function release(queue: Queue, id: string, options: ReleaseOptions = {}): Promise<ReleaseResult> {
  assertQueue(queue, 'release');
  checkReleaseOptions(options, 'release');
  const clock = options.clock ?? systemClock;
  let files = await findJob(queue, id);
  const spec = await specOf(queue, files, id);
  if (!files.gated) return { id, published: false, next: 'open', waitingFor: null };
  const record: ReleaseRecord = { fsjob: PROTOCOL_VERSION, type: 'release', job_id: id, released_ms: clock.nowMs(), by: await selfIdentity() };
  let published = true;
  try {
    // The link is the commit point: the job is released (HOLD-1).
    await publishRecord(files.dir, 'release.json', encodeRecord('release', record, { expectedJobId: id }), 'link', queue.fsOptions);
  } catch (error) {
    if (isFsjobError(error, 'EXISTS')) published = false;
    else if (isFsjobError(error, 'NOT_FOUND')) {
      // The gate opened between the look and the link: only a release (or a cancel) opens a held job's gate.
      files = await findJob(queue, id);
      if (!files.gated) return { id, published: false, next: 'open', waitingFor: null };
      throw error;
    } else throw error;
  }
  const verdict = await gateVerdict(queue, spec, await gateFacts(queue, id));
  if (verdict.kind === 'open') {
    await openGate(queue, id, spec.priority);
    return { id, published, next: 'open', waitingFor: null };
  }
  const waitingFor =
    verdict.kind === 'blocked'
      ? `dependency ${verdict.awaiting}`
      : // AFTER-3: it waits for nothing that can come; a worker cancels it (the reason says why).
        verdict.kind === 'cancel'
        ? `a worker to cancel it, never to run it: ${verdict.reason}`
        : verdict.kind === 'newer'
          ? 'a consumer of its newer version'
          : 'its release';
  return { id, published, next: 'waiting', waitingFor };
}

/** Which held jobs `releaseWhere` releases: those of a lane, with every given label, or both. */
export interface ReleaseSelection {
  lane?: string;
  labels?: Readonly<Record<string, string>>;
}

/**
 * Release every held job (gated, with `hold`, not yet released) that matches
 * the selection: one listing of jobs/ for the gated names, then `release`
 * for each match. Resolves to the results in id order.
 */
export async function releaseWhere(queue: Queue, selection: ReleaseSelection, options: ReleaseOptions = {}): Promise<ReleaseResult[]> {
  assertQueue(queue, 'releaseWhere');
  checkReleaseOptions(options, 'releaseWhere');
  if (typeof selection !== 'object' || selection === null) throw new FsjobError('USAGE', `releaseWhere takes a selection ({ lane } or { labels }), not ${describe(selection)}`);
  checkString(selection, 'releaseWhere', 'lane');
  checkStringRecord(selection, 'releaseWhere', 'labels');
  if (selection.lane === undefined && (selection.labels === undefined || Object.keys(selection.labels).length === 0)) {
    throw new FsjobError('USAGE', 'say which held jobs to release: ids, a lane, or labels');
  }
  const gated = (await queue.dirs.jobs.list())
    .filter((entry) => entry.kind === 'dir' && entry.name.endsWith('.gated'))
    .map((entry) => jobIdOfDirName(entry.name))
    .filter((id): id is string => id !== undefined)
    .sort();
  const results: ReleaseResult[] = [];
  for (const id of gated) {
    let files: JobFiles;
    try {
      files = await findJob(queue, id);
    } catch (error) {
      if (isFsjobError(error, 'NOT_FOUND')) continue;
      throw error;
    }
    const spec = await readSpec(queue, files);
    if (spec === undefined || spec.hold !== true || files.release || files.receipt) continue;
    if (selection.lane !== undefined && spec.lane !== selection.lane) continue;
    if (selection.labels !== undefined && !Object.entries(selection.labels).every(([name, value]) => spec.labels[name] === value)) continue;
    try {
      results.push(await release(queue, id, options));
    } catch (error) {
      // Cancelled and finished meanwhile: nothing to release.
      if (!isFsjobError(error, 'FINISHED') && !isFsjobError(error, 'NOT_FOUND')) throw error;
    }
  }
  return results;
}
