/**
 * The jobs of a queue (`fsjob status` without an id): jobs/ listed once, each
 * job summarized from which records exist (STATUS-1), filtered, ordered and
 * counted; a job the filesystem refuses to read is listed apart (I7). One
 * job in full and the workers are inspect.ts's.
 */
import { displayText, type RecordText } from '../records/bytes.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { jobIdOfDirName } from '../records/names.ts';
import { checkChoice, checkCount, checkFunction, checkMethods, checkOptionsObject, checkStringRecord, checkStrings } from '../base/option-checks.ts';
import { attemptsUsed, deriveStatus, listJob, readGenRecord, readJobRecord, type JobFiles, type JobStatus, type JobStatusView } from '../model/job.ts';
import { listDir } from '../fs/safefs.ts';
import type { ReceiptRecord, SpecRecord } from '../records/codec.ts';
import { assertQueue, jobDir, type Queue } from '../model/queue.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import { countIndexed } from '../model/ready.ts';
import { matchesSelection } from './selection.ts';
import { claimOrder, durationOrder, newestFirst, type DurationFilter, type Visit } from './list-order.ts';
import type { ReadOptions } from './inspect.ts';

/** One line of `listJobs`: a job, its status and its outcome so far. */
export interface JobSummary {
  id: string;
  status: JobStatus;
  attempts: number;
  /** From the spec; null when the spec cannot be read. */
  maxAttempts: number | null;
  lane: string | null;
  createdMs: number | null;
  /** What the job runs: argv joined, or `handler:<name>`. */
  what: string | null;
  /** The command of a command job as its spec holds it (SPEC-3: bytes that are not UTF-8 in base64); null for a payload job or an unreadable spec. */
  argv: RecordText[] | null;
  /** The handler of a payload job. */
  handler: string | null;
  outcome: ReceiptRecord['outcome'] | null;
  exitCode: number | null;
  /** The worker whose open claim runs the job now (running or claimed), from the claim record; null otherwise. */
  workerId: string | null;
  /** From the spec; null when the spec cannot be read. */
  priority: number | null;
  /** From the spec; null when the spec cannot be read. */
  labels: Readonly<Record<string, string>> | null;
  /** When the last execution started: the receipt's started_ms, or the exec record of a running job; null when none has started (or it is not running now). */
  startedMs: number | null;
  /** When the receipt was published (finished_ms); null while unfinished. */
  finishedMs: number | null;
  /** finishedMs - startedMs, or for a running job how long it has run so far; null without a start. */
  durationMs: number | null;
}

/** How `listJobs` orders the jobs it returns. */
export type JobSort = 'age' | 'priority' | 'duration';

/** How a finished job ended: the `outcome` of its receipt. */
export type Outcome = ReceiptRecord['outcome'];

/** Every JobStatus and every Outcome, for listJobs' check of its filters; the `satisfies` lines fail to compile when a member is missing. */
const JOB_STATUSES = ['queued', 'held', 'blocked', 'delayed', 'retrying', 'claimed', 'running', 'cancelling', 'expired', 'orphaned', 'finished', 'damaged'] as const;
const RECEIPT_OUTCOMES = ['succeeded', 'failed', 'timed_out', 'expired', 'cancelled', 'force_stopped', 'lost', 'rejected'] as const;
true satisfies [Exclude<JobStatus, (typeof JOB_STATUSES)[number]>] extends [never] ? true : false;
true satisfies [Exclude<Outcome, (typeof RECEIPT_OUTCOMES)[number]>] extends [never] ? true : false;

/** Options of `listJobs`. */
export interface ListOptions extends ReadOptions {
  /** At most this many jobs, the first in the order of `sort`. @default Infinity */
  limit?: number;
  /** Only jobs in one of these statuses. @default every status */
  statuses?: readonly JobStatus[];
  /** Only finished jobs with one of these outcomes (with `statuses`: jobs matching either). @default no outcome filter */
  outcomes?: readonly Outcome[];
  /** Only jobs whose spec has each of these labels with exactly this value (with the status filters: jobs matching both). @default no label filter */
  labels?: Readonly<Record<string, string>>;
  /**
   * `age`: newest first (enqueue order reversed, LAYOUT-4). `priority`: the
   * order consumers claim in (CLAIM-1: highest priority first, then
   * oldest), from the listing of ready/, then the jobs without a ready
   * entry (finished, or an entry lost to a crash, READY-4) newest first.
   * `duration`: longest run first (a running job by its time so far), then
   * jobs that never started, newest first; it reads every receipt (one read
   * each, see list-order.ts). Each stops examining jobs in full once
   * `limit` jobs matched. @default 'age'
   */
  sort?: JobSort;
  /**
   * Count every job of the queue by status and by outcome, and the open
   * claims of each worker (JobList.counts). Costs one look at every job,
   * whatever the limit: about 0.1-0.3 ms each. A number counts only when
   * jobs/ holds at most that many jobs (JobList.counts is then absent and
   * JobList.index is the summary). @default false
   */
  counts?: boolean | number;
  /** Called before each job is looked at: `done` of `total` jobs, for a progress display. */
  onProgress?: (done: number, total: number) => void;
}

/**
 * What the listings of jobs/ and ready/ say without opening a job: ready/
 * holds an entry for every published job without a receipt (READY-1). Both
 * figures are the index's, a hint: an entry can outlive its job's receipt
 * by a crash (READY-2 removes it after the receipt), and one lost to a crash
 * is rebuilt by the next consumer or recover (READY-4).
 */
export interface IndexCounts {
  /** Job directories with a ready entry. */
  unfinished: number;
  /** Job directories without one. */
  finished: number;
}

/** What `listJobs` counts with `counts: true`. */
export interface JobCounts {
  /** Jobs per derived status (STATUS-1); statuses no job has are absent. */
  statuses: Partial<Record<JobStatus, number>>;
  /** Finished jobs per receipt outcome. */
  outcomes: Partial<Record<Outcome, number>>;
  /** Open claims (running or claimed jobs) per worker id: what each worker runs right now. */
  workers: Record<string, number>;
}

/** The jobs of a queue as `listJobs` returns them. */
export interface JobList {
  /** In the order of ListOptions.sort: by default newest first (descending id, which is enqueue order, LAYOUT-4). */
  jobs: JobSummary[];
  /** Job directories in jobs/. */
  total: number;
  /** True when the limit stopped the listing before every job was examined. */
  more: boolean;
  /** Names in jobs/ that are not job ids or not directories: foreign, never opened (LAYOUT-4). */
  foreign: string[];
  /** With the `counts` option (and, when it is a number, jobs/ within it). */
  counts?: JobCounts;
  /** With the `counts` option: the index's summary (two listings, no job opened); absent when ready/ cannot be listed (refused or missing: fsjob validate says why). */
  index?: IndexCounts;
  /**
   * Jobs looked at that could not be read (an IO error: a directory of mode
   * 0000 gives EACCES; EIO): neither shown nor counted, while every other
   * job is (one bad job never hides a queue, I7). Empty when all were read.
   */
  unreadable: UnreadableJob[];
}

/** A job `listJobs` could not read, and why. */
export interface UnreadableJob {
  id: string;
  /** The path that failed (the job's directory, or one its status rests on, such as a dependency's). */
  path: string;
  /** The system's error name (EACCES, EIO, ...); null when there is none. */
  errno: string | null;
  /** What failed, with the path and the errno. */
  reason: string;
}

/**
 * Whether a job has a receipt (STATUS-1: any entry of that name), by one
 * lstat without the directory's checks (rebuildReady's look): a job passed
 * over here is finished whatever its directory is, and one whose directory
 * readers refuse is damaged, which only a filter that keeps finished jobs
 * (and so skips nothing) can show.
 */
async function hasReceipt(queue: Queue, id: string): Promise<boolean> {
  return jobDir(queue, id)
    .present('receipt.json')
    .catch(() => false); // unreadable: examine the job in full
}

/** Why readers refuse a job directory they listed as a directory (its mode or owner; a link or FIFO is not listed as one). */
const REFUSED_DIR = ['UNSAFE_MODE', 'FOREIGN_OWNER', 'SYMLINK_REFUSED', 'NOT_REGULAR'] as const;

async function summarize(queue: Queue, id: string, clock: Clock | undefined): Promise<JobSummary | undefined> {
  let files: JobFiles;
  try {
    files = await listJob(queue, id);
  } catch (error) {
    if (isFsjobError(error, 'NOT_FOUND')) return undefined; // removed by gc while we listed
    // SEC-5, SEC-6: a job directory readers refuse is one damaged job, not a listing that fails.
    if (REFUSED_DIR.some((code) => isFsjobError(error, code))) {
      return {
        id,
        status: 'damaged',
        attempts: 0,
        maxAttempts: null,
        lane: null,
        createdMs: null,
        what: null,
        argv: null,
        handler: null,
        outcome: null,
        exitCode: null,
        workerId: null,
        priority: null,
        labels: null,
        startedMs: null,
        finishedMs: null,
        durationMs: null,
      };
    }
    throw error;
  }
  let spec: SpecRecord | undefined;
  if (files.spec) {
    const read = await readJobRecord(queue, files, 'spec');
    if (read.ok) spec = read.value;
  }
  const view = await deriveStatus(queue, files, { ...(clock === undefined ? {} : { clock }), ...(spec === undefined ? {} : { spec }) });
  const startedMs = await startedOf(queue, files, view);
  const finishedMs = view.receipt?.finished_ms ?? null;
  const endMs = finishedMs ?? (view.status === 'running' ? (clock ?? systemClock).nowMs() : null);
  return {
    id,
    status: view.status,
    attempts: view.receipt?.attempts ?? (await attemptsUsed(queue, files)),
    maxAttempts: spec?.max_attempts ?? null,
    lane: spec?.lane ?? null,
    createdMs: spec?.created_ms ?? null,
    what: spec === undefined ? null : spec.argv !== undefined ? spec.argv.map(displayText).join(' ') : `handler:${spec.handler ?? '?'}`,
    argv: spec?.argv === undefined ? null : [...spec.argv],
    handler: spec?.handler ?? null,
    outcome: view.receipt?.outcome ?? null,
    exitCode: view.receipt?.exit_code ?? null,
    workerId: (view.status === 'running' || view.status === 'claimed') && view.claim !== undefined ? view.claim.worker_id : null,
    priority: spec?.priority ?? null,
    labels: spec?.labels ?? null,
    startedMs,
    finishedMs,
    durationMs: startedMs === null || endMs === null ? null : Math.max(0, endMs - startedMs),
  };
}

/** JobSummary.startedMs: the receipt's (RCPT-5's started_ms), else the exec record of the current generation while it runs (one more small read, for running jobs only). */
async function startedOf(queue: Queue, files: JobFiles, view: JobStatusView): Promise<number | null> {
  if (view.receipt !== undefined) return view.receipt.started_ms;
  if (view.status !== 'running') return null;
  const exec = await readGenRecord(queue, files, 'exec', view.gen);
  return exec.ok ? exec.value.recorded_ms : null;
}

/**
 * The jobs of a queue, in the order of `sort`. jobs/ is listed once; jobs
 * are then examined in that order until `limit` matched, so a small limit
 * stays fast on a big queue: newest first (age), ready/'s claim order
 * (priority), or the order of every receipt read loosely (duration; see
 * list-order.ts). A filter without `finished` skips finished jobs after a
 * single lstat of their receipt. With `counts`, every job is examined and
 * counted first.
 */
export async function listJobs(queue: Queue, options: ListOptions = {}): Promise<JobList> {
  assertQueue(queue, 'listJobs');
  checkOptionsObject(options, 'listJobs');
  checkCount(options, 'listJobs', 'limit', 0, true);
  checkStrings(options, 'listJobs', 'statuses', JOB_STATUSES);
  checkStrings(options, 'listJobs', 'outcomes', RECEIPT_OUTCOMES);
  checkStringRecord(options, 'listJobs', 'labels');
  checkChoice(options, 'listJobs', 'sort', ['age', 'priority', 'duration']);
  if (typeof options.counts !== 'boolean') checkCount(options, 'listJobs', 'counts', 0, false);
  checkFunction(options, 'listJobs', 'onProgress');
  checkMethods(options, 'listJobs', 'clock', ['nowMs', 'sleep']);
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const wantedStatuses = options.statuses === undefined ? undefined : new Set<string>(options.statuses);
  const wantedOutcomes = options.outcomes === undefined ? undefined : new Set<string>(options.outcomes);
  const filtered = wantedStatuses !== undefined || wantedOutcomes !== undefined;
  const selection = { labels: options.labels ?? {} };
  const matches = (job: JobSummary): boolean =>
    (!filtered || wantedStatuses?.has(job.status) === true || (job.outcome !== null && wantedOutcomes?.has(job.outcome) === true)) &&
    matchesSelection(job.labels === null ? undefined : { lane: job.lane, labels: job.labels }, selection);
  const sort = options.sort ?? 'age';
  // Only a filter that can match a finished job needs finished jobs examined.
  // (fsjob status passes both lists, one of them empty.)
  const finishedMayMatch = !filtered || (wantedOutcomes?.size ?? 0) > 0 || wantedStatuses?.has('finished') === true || wantedStatuses?.has('damaged') === true;
  const entries = await listDir(queue.paths.dir('jobs'), queue.fsOptions);
  const foreign: string[] = [];
  const ids: string[] = [];
  for (const entry of entries) {
    // jobs/<id> and, for a gated job, jobs/<id>.gated (GATE-1); a fixed-length id keeps the order.
    const id = entry.kind === 'dir' ? jobIdOfDirName(entry.name) : undefined;
    if (id !== undefined) ids.push(id);
    else if (!entry.name.startsWith('.')) foreign.push(entry.name);
  }
  // The index's summary comes with counts (wanted or skipped): a plain listing does not pay for a listing of ready/.
  // It takes the ids as listed, ascending.
  const index = options.counts === undefined || options.counts === false ? undefined : await indexCounts(queue, ids);
  ids.reverse();
  const counting = options.counts === true || (typeof options.counts === 'number' && ids.length <= options.counts);
  let looked = 0;
  const onLook = (): void => options.onProgress?.(looked++, ids.length);
  const unreadable: UnreadableJob[] = [];
  const look = async (id: string): Promise<JobSummary | undefined> => {
    try {
      return await summarize(queue, id, options.clock);
    } catch (error) {
      // I7: a job the filesystem refuses to read is listed apart; the listing goes on.
      if (!isFsjobError(error, 'IO')) throw error;
      unreadable.push({ id, path: error.path ?? queue.paths.job(id), errno: error.errno ?? null, reason: error.message });
      return undefined;
    }
  };
  let examine = look;
  let counts: JobCounts | undefined;
  if (counting) {
    // Every job is examined to be counted, once: the order below takes the summaries from here.
    counts = { statuses: {}, outcomes: {}, workers: {} };
    const examined = new Map<string, JobSummary>();
    for (const id of ids) {
      onLook();
      const summary = await look(id);
      if (summary === undefined) continue;
      count(counts, summary);
      examined.set(id, summary);
    }
    examine = (id) => Promise.resolve(examined.get(id));
  }
  const receiptOf = (id: string): Promise<boolean> => hasReceipt(queue, id);
  const visits: Iterable<Visit<JobSummary>> | AsyncIterable<Visit<JobSummary>> =
    sort === 'priority'
      ? claimOrder(queue, ids, receiptOf)
      : sort === 'duration'
        ? await durationOrder(queue, ids, durationFilter(finishedMayMatch, wantedStatuses, wantedOutcomes), examine, counting ? () => undefined : onLook)
        : newestFirst(ids);
  const jobs: JobSummary[] = [];
  let more = false;
  for await (const visit of visits) {
    if (jobs.length >= limit) {
      more = true;
      break;
    }
    if (!counting && sort !== 'duration') onLook();
    if (!counting && !finishedMayMatch && (visit.receipt ?? (await receiptOf(visit.id)))) continue;
    const summary = visit.summary ?? (await examine(visit.id));
    if (summary !== undefined && matches(summary)) jobs.push(summary);
  }
  return { jobs, total: ids.length, more, foreign, unreadable, ...(index === undefined ? {} : { index }), ...(counts === undefined ? {} : { counts }) };
}

/** What the duration order may pass over (see DurationFilter) for the status and outcome filters of listJobs. */
function durationFilter(finishedMayMatch: boolean, statuses: ReadonlySet<string> | undefined, outcomes: ReadonlySet<string> | undefined): DurationFilter {
  if (statuses === undefined && outcomes === undefined) return { finished: true, unfinished: true };
  const unfinished = [...(statuses ?? [])].some((status) => status !== 'finished');
  // Only outcomes (and unfinished statuses) wanted: a receipt with another outcome cannot match, unless the full look finds it damaged and damaged is wanted.
  const byOutcome = statuses?.has('finished') !== true && statuses?.has('damaged') !== true;
  return { finished: finishedMayMatch, unfinished, ...(byOutcome ? { outcome: (outcome: unknown) => typeof outcome === 'string' && outcomes?.has(outcome) === true } : {}) };
}

/** The ready index's summary; `ids` is the listing of jobs/, ascending. */
async function indexCounts(queue: Queue, ids: readonly string[]): Promise<IndexCounts | undefined> {
  let unfinished: number;
  try {
    unfinished = await countIndexed(queue, ids);
  } catch (error) {
    if (error instanceof FsjobError) return undefined; // a summary never fails the listing
    throw error;
  }
  return { unfinished, finished: ids.length - unfinished };
}

function count(counts: JobCounts, job: JobSummary): void {
  counts.statuses[job.status] = (counts.statuses[job.status] ?? 0) + 1;
  if (job.outcome !== null) counts.outcomes[job.outcome] = (counts.outcomes[job.outcome] ?? 0) + 1;
  if (job.workerId !== null) counts.workers[job.workerId] = (counts.workers[job.workerId] ?? 0) + 1;
}
