/**
 * The orders in which `listJobs` visits jobs when sorted (`fsjob status
 * --sort`), each built so that a small limit stays cheap on a big queue:
 *
 * - priority: CLAIM-1's order is the byte order of ready/'s names, so the
 *   listing of ready/ is the order itself; jobs are examined in it until the
 *   limit is reached, never all of them. Jobs without an entry (finished,
 *   the bulk of a long-lived queue, or unfinished with an entry a crash lost,
 *   READY-4) follow, newest first, as the plain listing shows them.
 * - duration: no name or index holds a run's length, so every receipt is
 *   read, but loosely (one read and a JSON parse, no record checks, no look
 *   at the rest of the job); only the jobs shown, and the few unfinished
 *   jobs that were ever claimed, are examined in full.
 *
 * Neither order decides what a job is: each job shown is examined as the
 * plain listing examines it (STATUS-1), and the filters apply to that.
 */
import { RECORD_MAX } from '../base/constants.ts';
import { isFsjobError } from '../base/errors.ts';
import { listReady } from '../model/ready.ts';
import { jobDir, type Queue } from '../model/queue.ts';

/**
 * The part of a job's summary the duration order reads; job-list.ts's
 * JobSummary has it (this module does not import job-list.ts, which imports it).
 */
export interface Timed {
  durationMs: number | null;
}

/** One job to look at, in the order shown; what the order learned about it on the way. */
export interface Visit<S extends Timed = Timed> {
  id: string;
  /** Whether receipt.json is there, when the order looked. */
  receipt?: boolean;
  /** The job examined already (by the duration order). */
  summary?: S;
}

/** The plain listing's order: `ids` as given (descending: newest first). */
export function* newestFirst<S extends Timed>(ids: readonly string[]): Generator<Visit<S>> {
  for (const id of ids) yield { id };
}

/**
 * `--sort priority`: the jobs of ready/ in claim order (CLAIM-1: highest
 * priority first, then oldest), then every other job newest first. `ids` is
 * the listing of jobs/, descending; an entry naming no job of it (a producer
 * between ENQ-2 and ENQ-3, a job gc removed) is passed over, as is an entry
 * whose job has a receipt (stale, READY-3): that job comes with the others.
 * A job with two entries comes once, at its first. ready/ that cannot be
 * listed gives the plain order (fsjob validate says why).
 */
export async function* claimOrder<S extends Timed>(queue: Queue, ids: readonly string[], hasReceipt: (id: string) => Promise<boolean>): AsyncGenerator<Visit<S>> {
  const known = new Set(ids);
  const visited = new Set<string>();
  let entries: Awaited<ReturnType<typeof listReady>> = [];
  try {
    entries = await listReady(queue);
  } catch (error) {
    if (!isFsjobError(error)) throw error;
  }
  for (const entry of entries) {
    if (!known.has(entry.id) || visited.has(entry.id)) continue;
    visited.add(entry.id);
    if (await hasReceipt(entry.id)) {
      visited.delete(entry.id);
      continue;
    }
    yield { id: entry.id, receipt: false };
  }
  for (const id of ids) if (!visited.has(id)) yield { id };
}

/** What the duration order reads of a receipt: its run, loosely (undefined when it is not there). */
interface Run {
  /** finished_ms - started_ms when both are numbers; null otherwise (never started, or not a record the order can read). */
  durationMs: number | null;
  outcome: unknown;
}

async function runOf(queue: Queue, id: string): Promise<Run | undefined> {
  let bytes: Buffer | undefined;
  try {
    bytes = await jobDir(queue, id).read('receipt.json', RECORD_MAX, { allowMissing: true });
  } catch (error) {
    // Refused (a link, a foreign owner) or gone: the full look says what the job is.
    if (isFsjobError(error)) return { durationMs: null, outcome: undefined };
    throw error;
  }
  if (bytes === undefined) return undefined;
  try {
    const receipt = JSON.parse(bytes.toString('utf8')) as { started_ms?: unknown; finished_ms?: unknown; outcome?: unknown };
    const { started_ms: started, finished_ms: finished } = receipt;
    return { durationMs: typeof started === 'number' && typeof finished === 'number' ? Math.max(0, finished - started) : null, outcome: receipt.outcome };
  } catch {
    return { durationMs: null, outcome: undefined }; // not JSON: the full look calls the job damaged
  }
}

/** Which jobs the duration order may pass over without a full look, because the filter cannot match them. */
export interface DurationFilter {
  /** A finished job may match. */
  finished: boolean;
  /** An unfinished job may match. */
  unfinished: boolean;
  /** A finished job with this receipt outcome (as read loosely) may match; absent: any. */
  outcome?: (outcome: unknown) => boolean;
}

/**
 * `--sort duration`: longest run first (a running job by its time so far),
 * then the jobs that never started, newest first; ties newest first. `ids`
 * is the listing of jobs/, descending. Reads every receipt (loosely, see
 * runOf); of an unfinished job it looks for claim.1.json, and examines in
 * full (`examine`) only one that was ever claimed. `onLook` is called per job.
 */
export async function durationOrder<S extends Timed>(queue: Queue, ids: readonly string[], filter: DurationFilter, examine: (id: string) => Promise<S | undefined>, onLook: () => void): Promise<Visit<S>[]> {
  const timed: { visit: Visit<S>; durationMs: number }[] = [];
  const never: Visit<S>[] = [];
  const place = (visit: Visit<S>, durationMs: number | null): void => void (durationMs === null ? never.push(visit) : timed.push({ visit, durationMs }));
  for (const id of ids) {
    onLook();
    // A filter that no finished job can match needs only to know that the receipt is there (one lstat).
    if (!filter.finished && (await jobDir(queue, id).present('receipt.json').catch(() => false))) continue;
    const run = await runOf(queue, id);
    if (run !== undefined) {
      if (filter.finished && (run.outcome === undefined || filter.outcome === undefined || filter.outcome(run.outcome))) place({ id, receipt: true }, run.durationMs);
      continue;
    }
    if (!filter.unfinished) continue;
    // Generations start at 1 (CLAIM-5) and claims are never removed: without claim.1.json the job never started.
    if (!(await jobDir(queue, id).present('claim.1.json').catch(() => true))) {
      never.push({ id, receipt: false });
      continue;
    }
    const summary = await examine(id);
    if (summary !== undefined) place({ id, summary }, summary.durationMs);
  }
  // ids came newest first and sort is stable: equal durations stay newest first.
  timed.sort((a, b) => b.durationMs - a.durationMs);
  return [...timed.map((entry) => entry.visit), ...never];
}
