/**
 * fsjob producer: publishes jobs into a queue directory, and gives operators
 * their reads and controls (spec/producer.md, spec/control.md and spec/recovery-and-gc.md).
 *
 * - A job is visible complete or not at all. It is staged in tmp/<id>/ with
 *   exclusive creates and fsyncs, and appears by one rename into jobs/: that
 *   rename is the commit point (ENQ-3, ENQ-5). Its id is reported only after
 *   jobs/ is fsynced (ENQ-4), and its ready entry exists before it (ENQ-2).
 * - A refused or failed enqueue leaves nothing: an invalid request is refused
 *   before anything is written (ENQ-1); a failure after that removes the
 *   staging directory and the ready entry (ENQ-6).
 * - At most one unfinished job holds a dedupe key (DEDUPE-1). The hold is
 *   taken by link between staging and publication, and holds only while its
 *   job is unfinished or its producer alive and staging (DEDUPE-3).
 * - Every record is schema-checked before a byte is written (VER-4) and
 *   published by link (PUB-3), so nothing is ever replaced. Cancelling a
 *   waiting job claims it like any owner would (CANCEL-2, CLAIM-5).
 * - A job with dependencies or a hold is published gated, at jobs/<id>.gated
 *   (GATE-1), after its dependencies were seen to exist (AFTER-2); releasing
 *   it is a write-once release.json, and its gate opens by one rename within
 *   jobs/ once every dependency is satisfied (HOLD-2, GATE-3).
 * - Only finished jobs are ever removed (GC-1); reads never write.
 * - Arguments and env values are bytes (SPEC-3): one that is not UTF-8 is
 *   given as `textOfBytes(bytes)` ({"base64": ...}) and runs as exactly those
 *   bytes; a string with a lone surrogate is refused, never written as U+FFFD.
 *
 * Assumptions: tmp/ and jobs/ are one filesystem (LAYOUT-3); the queue root
 * is ours and private (SEC-1); ids made in one millisecond by two processes
 * are ordered by their random part, which FIFO accepts (LAYOUT-4).
 *
 * Costs: an enqueue is four fsyncs (spec.json, the staged directory, jobs/,
 * tmp/), one more with stdin and two more with a dedupe key; the ready entry
 * is not fsynced because consumers rebuild lost entries (READY-4). Jobs
 * enqueued together (`enqueueMany`, `enqueueBatch`, or concurrent `enqueue`
 * calls on one queue object) share the fsync of jobs/ and tmp/ (spec/producer.md,
 * "Sharing step 8"): about two fsyncs per job in a batch.
 */
export { newJobId } from './id.ts';
export { textOfBytes, bytesOfText, type RecordText } from '../records/bytes.ts';
export { normalizeRequest, parseRequest, type NormalizeOptions, type NormalizedRequest, type SpecFields } from './request.ts';
export { enqueue, type Enqueued, type EnqueueOptions } from './enqueue.ts';
export { enqueueBatch, enqueueMany, type BatchOptions, type BatchResult, type ManyOptions, type ManyResult } from './many.ts';
export { cancel, type CancelOptions, type CancelResult } from './cancel.ts';
export { release, releaseWhere, type ReleaseOptions, type ReleaseResult, type ReleaseSelection } from './release.ts';
export { jobStatus, liveWorkers, type GenerationView, type JobReport, type ReadOptions, type WorkerView } from './inspect.ts';
export { listJobs, type IndexCounts, type JobCounts, type JobList, type JobSort, type Outcome, type JobSummary, type ListOptions, type UnreadableJob } from './job-list.ts';
export { waitFor, readLogs, WAIT_POLL_MS, type LogChunk, type LogOptions, type WaitOptions } from './watch.ts';
export { waitForMany, summaryExitCode, type ManyWaitOptions, type ManyWaitResult } from './wait-many.ts';
export { unfinishedJobs, matchesSelection, type JobSelection } from './selection.ts';
export { gc, type GcOptions, type GcProgress, type GcResult } from './gc.ts';
export { retry, RETRY_OF_LABEL, type RetryOptions } from './retry.ts';
export { pauseQueue, resumeQueue, pauseState, type PauseOptions, type PauseState } from '../model/pause.ts';
export { initQueue, openQueue, defaultQueuePath, type InitializedQueue, type Queue, type QueueOptions } from '../model/queue.ts';
export { FsjobError, isFsjobError, ERROR_CODES, type FsjobErrorCode, type FsjobErrorFields } from '../base/errors.ts';
/** Every record type (spec/records.md) and the request form (spec/spec-record.md), as the schemas define them. */
export type * from '../records/generated/types.ts';
export type { ReceiptOutcome, ReceiptReason } from '../records/codec.ts';
