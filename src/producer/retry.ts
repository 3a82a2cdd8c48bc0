/**
 * `fsjob retry ID`: a new job from a finished job's spec. A finished job is
 * never run again (its receipt is final, RCPT-6); what an operator means by
 * "retry" is a second job that does the same thing, enqueued like any other
 * (ENQ-1..6), that says where it came from: the label `retry-of` names the
 * job it repeats. Everything the spec decides is copied (command or handler
 * and payload, cwd, env, limits, lane, dedupe key, priority, labels; the
 * payload as written, REQ-2) and so is the stdin file, byte for byte; what belongs to the old job (its id,
 * created_ms, producer, a past not-before instant, a hold) is not.
 */
import { checkBoolean, checkMethods, checkOptionsObject } from '../base/option-checks.ts';
import { createHash } from 'node:crypto';
import { STDIN_MAX } from '../base/constants.ts';
import { FsjobError } from '../base/errors.ts';
import { readBounded } from '../fs/safefs.ts';
import { assertQueue, type Queue } from '../model/queue.ts';
import { readRecordIn, type JobRequest, type SpecRecord } from '../records/codec.ts';
import { parseRecordBytes } from '../records/json.ts';
import { enqueue, type Enqueued, type EnqueueOptions } from './enqueue.ts';
import { findJob, readReceipt } from './jobs.ts';

/** The label a retried job carries: the id of the job it repeats. */
export const RETRY_OF_LABEL = 'retry-of';

/** The request that publishes `spec` again (spec/spec-record.md: the spec without the members a producer sets). */
export function requestOf(spec: SpecRecord, retryOf: string): JobRequest {
  // A hold was the old job's, released or cancelled: the retry is asked for now (its dependencies stay: HOLD-1, AFTER-1).
  const { fsjob: _version, type: _type, id: _id, created_ms: _created, producer: _producer, stdin: _stdin, hold: _hold, ...fields } = spec;
  const request = { ...fields, labels: { ...spec.labels, [RETRY_OF_LABEL]: retryOf } } as JobRequest & { payload?: unknown };
  if (spec.argv !== undefined) delete request.payload;
  return request;
}

/** Options of `retry`. */
export interface RetryOptions extends Pick<EnqueueOptions, 'clock'> {
  /** Retry a job that is not finished yet (a second, concurrent run of the same thing). @default false: refused */
  unfinished?: boolean;
}

/**
 * Enqueues a copy of job `id` (which must be finished, unless `unfinished`)
 * labelled `retry-of=<id>`; resolves like enqueue. NOT_FOUND for no such
 * job, USAGE for an unfinished one, INVALID_RECORD when its receipt is not
 * a valid receipt of it (unless `unfinished`) or its spec or stdin
 * cannot be read back, DEDUPE_HELD when its dedupe key is held by another
 * unfinished job.
 */
export async function retry(queue: Queue, id: string, options: RetryOptions = {}): Promise<Enqueued> {
  assertQueue(queue, 'retry');
  checkOptionsObject(options, 'retry');
  checkBoolean(options, 'retry', 'unfinished');
  checkMethods(options, 'retry', 'clock', ['nowMs', 'sleep']);
  const files = await findJob(queue, id);
  // A receipt.json that is not this job's valid receipt (a hard link to another job's) leaves the job
  // damaged, not finished: refused as wait and validate refuse it.
  if (options.unfinished !== true) await readReceipt(queue, files);
  if (!files.receipt && options.unfinished !== true) {
    throw new FsjobError('USAGE', `job ${id} is not finished; a retry is a new job doing the same thing, so it waits until this one has its receipt (fsjob wait ${id})`, { jobId: id });
  }
  // REQ-2, REC-10: the payload is copied as written, so the spec is read keeping its text.
  const read = files.spec ? await readRecordIn(files.handle, 'spec.json', 'spec', { expectedJobId: files.id, parse: (bytes, form) => parseRecordBytes(bytes, form, { keepPayload: true }) }) : undefined;
  const spec = read?.ok === true ? read.value : undefined;
  if (spec === undefined) {
    throw new FsjobError('INVALID_RECORD', `job ${id} has no valid spec.json to copy (fsjob validate shows why)`, { jobId: id, path: queue.paths.jobFile(id, 'spec.json') });
  }
  let stdin: Buffer | undefined;
  if (spec.stdin !== null) {
    // SEC-2..SEC-4 as every read of a queue file; the bytes must still be the ones the spec names.
    stdin = await readBounded(queue.paths.jobFile(id, 'stdin'), STDIN_MAX, queue.fsOptions);
    if (stdin.length !== spec.stdin.bytes || createHash('sha256').update(stdin).digest('hex') !== spec.stdin.sha256) {
      throw new FsjobError('INVALID_RECORD', `the stdin file of job ${id} no longer matches its spec (size or sha256), so it cannot be copied`, { jobId: id, path: queue.paths.jobFile(id, 'stdin') });
    }
  }
  return enqueue(queue, requestOf(spec, id), {
    cwd: spec.cwd,
    source: `the retry of ${id}`,
    ...(stdin === undefined ? {} : { stdin }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
}
