/**
 * Many jobs at once (spec/producer.md, "Sharing step 8"): `enqueueBatch` for
 * request lines (REQ-1, what `fsjob enqueue --batch` reads) and
 * `enqueueMany` for request objects. Both run the jobs pipelined, up to
 * BATCH_WINDOW at once:
 *
 * - steps 2 to 4 (staging and its fsyncs) of each job beside the others';
 * - steps 5 to 7 (the dedupe hold, the ready entry, the rename) one job at a
 *   time in input order, so the first of two jobs with one dedupe key wins
 *   and ids are in input order;
 * - step 8, the fsync of jobs/, shared by every job renamed before it began
 *   (enqueue.ts, SharedSync).
 *
 * Each result is reported in input order, and a job's only once its fsync of
 * jobs/ returned (ENQ-4). A bad item yields an error and stops no other;
 * errors that are not FsjobErrors (bugs) propagate.
 */
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { checkFunction, describe } from '../base/option-checks.ts';
import { beginOperation } from '../fs/safefs.ts';
import { selfIdentity, type Identity } from '../model/identity.ts';
import { assertQueue, type Queue } from '../model/queue.ts';
import type { JobRequest, SpecRecord } from '../records/codec.ts';
import { holdIndexPublish, makeDurable, prepare, stage, type EnqueueOptions } from './enqueue.ts';
import type { Pending } from './pending.ts';
import { checkNormalizeOptions, normalizeChecked, normalizeRequest, parseRequest, type NormalizedRequest } from './request.ts';
import { plainPayload } from '../records/raw-json.ts';

/**
 * How many jobs are between their input and their report at once. Enough
 * that the fsyncs of one window keep libuv's pool and the disk busy
 * together; small enough that a bad disk leaves few jobs in doubt.
 */
export const BATCH_WINDOW = 64;

/** One line of `enqueueBatch`: the id of the job it published, or the error that refused it. */
export type BatchResult = { line: number; id: string } | { line: number; error: FsjobError };

/** Options of `enqueueBatch`: those of `enqueue`, less `stdin` and `source` (each line is its own request). */
export interface BatchOptions extends Omit<EnqueueOptions, 'stdin' | 'source'> {
  /** Called with each result as soon as it is known, in line order (the CLI prints ids as they are accepted). */
  onResult?: (result: BatchResult) => void;
}

/** One request of `enqueueMany`, by its position from 0: the published job, or the error that refused it. */
export type ManyResult = { index: number; id: string; spec: SpecRecord } | { index: number; error: FsjobError };

/** Options of `enqueueMany`: those of `enqueue` (defaults for every request). */
export interface ManyOptions extends EnqueueOptions {
  /** Called with each result as soon as it is known, in input order. */
  onResult?: (result: ManyResult) => void;
}

/**
 * One job per line, each line a request (REQ-1). Lines are numbered from 1;
 * blank lines are skipped. A bad line (invalid, refused, failed) yields
 * `{ line, error }`; every other line yields `{ line, id }`, once durable.
 */
export async function enqueueBatch(queue: Queue, lines: Iterable<string> | AsyncIterable<string>, options: BatchOptions = {}): Promise<BatchResult[]> {
  assertQueue(queue, 'enqueueBatch');
  checkManyOptions(options, 'enqueueBatch');
  // A string is iterable too, by characters: take it as the text of the lines, as its type allows it.
  if (typeof lines === 'string') lines = lines.split('\n');
  else if (!isIterable(lines)) throw new FsjobError('USAGE', `enqueueBatch takes the lines (an array, an iterable or async iterable of strings, or one string of lines), not ${describe(lines)}`);
  async function* numbered(): AsyncGenerator<{ n: number; text: string }> {
    let line = 0;
    for await (const text of lines) {
      line += 1;
      if (text.trim() !== '') yield { n: line, text };
    }
  }
  return pipelined(
    queue,
    numbered(),
    ({ n, text }) => {
      const source = `batch line ${n}`;
      return { normalized: normalizeChecked(parseRequest(Buffer.from(text, 'utf8'), { source }), { ...options, source }), options: { ...options, source } };
    },
    ({ n }, job) => ('error' in job ? { line: n, error: job.error } : { line: n, id: job.id }),
    options.onResult,
  );
}

/**
 * Many request objects (as `enqueue` takes), enqueued together: far cheaper
 * per job than one `enqueue` after another, because their fsyncs run at once
 * and the fsync of jobs/ is shared. Resolves to one result per request, in
 * input order: `{ index, id, spec }` once the job is durable (ENQ-4), or
 * `{ index, error }` for a request that was refused or failed.
 */
export async function enqueueMany(queue: Queue, requests: Iterable<JobRequest> | AsyncIterable<JobRequest>, options: ManyOptions = {}): Promise<ManyResult[]> {
  assertQueue(queue, 'enqueueMany');
  checkManyOptions(options, 'enqueueMany');
  if (!isIterable(requests)) throw new FsjobError('USAGE', `enqueueMany takes the requests (an array, an iterable or async iterable), not ${describe(requests)}`);
  async function* indexed(): AsyncGenerator<{ n: number; request: JobRequest }> {
    let index = 0;
    for await (const request of requests) yield { n: index++, request };
  }
  return pipelined(
    queue,
    indexed(),
    ({ n, request }) => {
      const source = `request ${n}`;
      return { normalized: normalizeRequest(request, { ...options, source }), options: { ...options, source } };
    },
    ({ n }, job) => ('error' in job ? { index: n, error: job.error } : { index: n, id: job.id, spec: plainPayload(job.spec) }),
    options.onResult,
  );
}

/** The options of enqueueMany and enqueueBatch: those of enqueue, and onResult. */
function checkManyOptions(options: unknown, caller: string): void {
  checkNormalizeOptions(options, caller);
  if (options !== undefined) checkFunction(options as object, caller, 'onResult');
}

function isIterable(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (Symbol.iterator in value || Symbol.asyncIterator in value);
}

type Outcome = { id: string; spec: SpecRecord } | { error: FsjobError };
type Slot<R> = { settled: false } | { settled: true; result: R } | { settled: true; bug: unknown };

/** The pipeline both entry points share: items in, results out in input order. */
async function pipelined<T, R>(
  queue: Queue,
  items: AsyncIterable<T>,
  normalize: (item: T) => { normalized: NormalizedRequest; options: EnqueueOptions },
  resultOf: (item: T, outcome: Outcome) => R,
  onResult: ((result: R) => void) | undefined,
): Promise<R[]> {
  const producer = await selfIdentity();
  // A pipeline overlaps its own jobs' fsyncs: none of them runs on the main thread (src/fs/flush.ts).
  const operation = beginOperation(2);
  const results: R[] = [];
  const slots: Slot<R>[] = [];
  let reported = 0;
  let bug: { error: unknown } | undefined;
  let wake: (() => void) | undefined;
  const report = () => {
    for (let slot = slots[reported]; slot !== undefined && slot.settled; slot = slots[reported]) {
      slots[reported] = { settled: false }; // let the result go once reported
      reported += 1;
      if ('bug' in slot) bug ??= { error: slot.bug };
      else {
        results.push(slot.result);
        try {
          onResult?.(slot.result);
        } catch (error) {
          // The caller's callback failed: thrown to the caller at the end, as a bug is
          // (here it would be an unhandled rejection, which ends the process).
          bug ??= { error };
        }
      }
    }
    wake?.();
  };
  const waitForReports = () => new Promise<void>((resolve) => (wake = resolve));
  /** Resolves when the job before this one has left steps 5 to 7. */
  let turn: Promise<void> = Promise.resolve();
  /** A failure to read the input (a batch file that fails mid-way): thrown once the jobs in flight are reported. */
  let unreadable: { error: unknown } | undefined;
  try {
    for await (const item of items) {
      if (bug !== undefined) break;
      const index = slots.length;
      slots.push({ settled: false });
      const previous = turn;
      let done!: () => void;
      turn = new Promise((resolve) => (done = resolve));
      void oneJob(queue, producer, () => normalize(item), previous, done).then(
        (outcome) => (slots[index] = { settled: true, result: resultOf(item, outcome) }),
        (error: unknown) => (slots[index] = { settled: true, bug: error }),
      ).then(report);
      while (slots.length - reported >= BATCH_WINDOW && bug === undefined) await waitForReports();
    }
  } catch (error) {
    unreadable = { error };
  }
  // Every job already taken from the input is finished and reported first:
  // one published but never reported would be a job its producer cannot name.
  while (slots.length > reported) await waitForReports();
  operation();
  if (bug !== undefined) throw bug.error;
  if (unreadable !== undefined) throw unreadable.error;
  return results;
}

/**
 * One job of the pipeline: normalized, prepared and staged at once; steps 5
 * to 7 after the job before (`previous`), then `done` for the job after;
 * then the shared step 8. An FsjobError is its outcome; anything else a bug.
 */
async function oneJob(
  queue: Queue,
  producer: Identity,
  normalize: () => { normalized: NormalizedRequest; options: EnqueueOptions },
  previous: Promise<void>,
  done: () => void,
): Promise<Outcome> {
  let job: Pending;
  try {
    try {
      const { normalized, options } = normalize();
      job = prepare(queue, normalized, producer, options);
      await stage(queue, job);
    } catch (error) {
      void previous.then(done);
      throw error;
    }
    try {
      await previous;
      await holdIndexPublish(queue, job);
    } finally {
      done();
    }
    await makeDurable(queue, job);
    return { id: job.id, spec: plainPayload(job.spec) };
  } catch (error) {
    if (!isFsjobError(error)) throw error;
    return { error };
  }
}
