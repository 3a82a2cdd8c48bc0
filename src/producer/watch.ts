/**
 * Waiting on a job without spinning: an fs.watch on the job directory wakes
 * the waiter when an entry changes, and a poll (500 ms by default) covers
 * filesystems where watching does not work (NFS, some containers) and events
 * that were coalesced away. Nothing is trusted from an event: each wake-up
 * re-reads the records.
 */
import { watch, type FSWatcher } from 'node:fs';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { checkBoolean, checkChoice, checkDuration, checkInteger, checkMethods, checkOptionsObject, checkSignal, describe } from '../base/option-checks.ts';
import { OUTPUT_MAX } from '../base/constants.ts';
import { listJob, readJobRecord, type JobFiles } from '../model/job.ts';
import { gapOffset, outputKeepOf, type OutputKeep } from '../model/output-keep.ts';
import { readBounded } from '../fs/safefs.ts';
import { readRecord, type ReceiptRecord } from '../records/codec.ts';
import { assertQueue, locateJob, type Queue } from '../model/queue.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import { findJob, invalidReceipt } from './jobs.ts';
import { noticeUnserved } from './service-notice.ts';

/** The poll period when no watch event arrives. */
export const WAIT_POLL_MS = 500;
/** Shortest pause between two reads of a growing output file in follow mode. */
const FOLLOW_MIN_GAP_MS = 100;

/** Wakes on a watch event, after `pollMs`, or on abort; never keeps the process alive through the watcher. */
export class Waker {
  private watcher: FSWatcher | undefined;
  private pending = false;
  private wakeUp: (() => void) | undefined;

  constructor(dir: string) {
    try {
      this.watcher = watch(dir, { persistent: false }, () => this.poke());
      this.watcher.on('error', () => this.close()); // the poll carries on alone
    } catch {
      this.watcher = undefined; // no inotify here: poll only
    }
  }

  private poke(): void {
    this.pending = true;
    this.wakeUp?.();
  }

  /**
   * Resolves on the next event (or one that came since the last sleep), after
   * `ms`, or on abort; an event resolves no earlier than `minMs` after the
   * call, so a stream of events (a command writing fast) is read in batches.
   */
  sleep(ms: number, signal: AbortSignal | undefined, minMs = 0): Promise<void> {
    const started = performance.now(); // monotonic: a wall clock that goes back must not stretch the batching (LEASE-4)
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.wakeUp = undefined;
        this.pending = false;
        resolve();
      };
      const onEvent = (): void => {
        const wait = minMs - (performance.now() - started);
        if (wait <= 0) return done();
        clearTimeout(timer);
        timer = setTimeout(done, Math.min(wait, Math.max(0, ms)));
      };
      timer = setTimeout(done, Math.max(0, ms));
      signal?.addEventListener('abort', done, { once: true });
      if (this.pending) onEvent();
      else this.wakeUp = onEvent;
    });
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }
}

function vanished(queue: Queue, id: string, cause: unknown): FsjobError {
  return new FsjobError('NOT_FOUND', `job ${id} disappeared from ${queue.root} while being watched (gc removes finished jobs, GC-1); its receipt is gone with it`, {
    jobId: id,
    path: queue.paths.job(id),
    cause,
  });
}

/**
 * The receipt when it exists and is valid; undefined while there is none
 * (a gated job has none: its receipt is published only once its gate is
 * open, GATE-2); INVALID_RECORD when it is invalid (RCPT-6: it will never
 * change).
 */
export async function receiptOf(queue: Queue, id: string): Promise<ReceiptRecord | undefined> {
  const file = queue.paths.jobFile(id, 'receipt.json');
  let read;
  try {
    read = await readRecord(file, 'receipt', { ...queue.fsOptions, expectedJobId: id, allowMissing: true });
  } catch (error) {
    if (!isFsjobError(error, 'NOT_FOUND')) throw error;
    const place = await locateJob(queue, id);
    if (place === 'gated') return undefined;
    // GATE-4: opened between the read and the look: read it at its open name.
    if (place === 'open') return receiptOf(queue, id);
    throw vanished(queue, id, error);
  }
  if (read === undefined) return undefined;
  if (read.ok) return read.value;
  throw invalidReceipt(file, id, read.findings);
}

/** Options of `waitFor`. */
export interface WaitOptions {
  /** Give up after this long with TIMEOUT. @default no limit */
  timeoutMs?: number;
  /** Abort the wait: rejects with the signal's reason. */
  signal?: AbortSignal;
  /** @default WAIT_POLL_MS */
  pollMs?: number;
  /** @default systemClock */
  clock?: Clock;
  /**
   * Where to say that the job waits while no live worker serves the queue
   * (looked at after 1.5 s, then every 5 s; said once, and once more when a
   * worker shows up), so a wait that cannot end does not pass in silence.
   * `false` says nothing. @default a line on process.stderr
   */
  unservedNotice?: ((line: string) => void) | false;
}

/** WaitOptions as a JavaScript caller may pass them (base/option-checks.ts): a string timeout would otherwise wait for ever, a string signal crash a timer. */
export function checkWaitOptions(options: unknown, caller: string): void {
  checkOptionsObject(options, caller);
  if (options === undefined) return;
  checkDuration(options, caller, 'timeoutMs', 0, true);
  checkSignal(options, caller, 'signal');
  checkInteger(options, caller, 'pollMs', 1, Number.MAX_SAFE_INTEGER);
  checkMethods(options, caller, 'clock', ['nowMs', 'sleep']);
  const notice = (options as WaitOptions).unservedNotice;
  if (notice !== undefined && notice !== false && typeof notice !== 'function') {
    throw new FsjobError('USAGE', `${caller}: option unservedNotice must be a function or false, not ${describe(notice)}`, { field: '/unservedNotice' });
  }
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw signal.reason ?? new Error('aborted');
}

/**
 * Resolves to the job's receipt once it exists (RCPT-3); while it waits with
 * no live worker serving the queue, says so (`unservedNotice`). Throws NOT_FOUND for
 * an unknown job, TIMEOUT when `timeoutMs` elapses first, INVALID_RECORD when
 * the receipt is invalid, and the abort reason when `signal` aborts.
 */
export async function waitFor(queue: Queue, id: string, options: WaitOptions = {}): Promise<ReceiptRecord> {
  assertQueue(queue, 'waitFor');
  checkWaitOptions(options, 'waitFor');
  const clock = options.clock ?? systemClock;
  const pollMs = options.pollMs ?? WAIT_POLL_MS;
  const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : clock.nowMs() + options.timeoutMs;
  const files = await findJob(queue, id);
  // Watch before the first look, so a receipt published in between wakes us.
  const waker = new Waker(files.dir);
  const notice = options.unservedNotice ?? ((line: string) => void process.stderr.write(line));
  const stopNotice = notice === false ? undefined : noticeUnserved(queue, [id], { stderr: notice });
  try {
    for (;;) {
      throwIfAborted(options.signal);
      const receipt = await receiptOf(queue, id);
      if (receipt !== undefined) return receipt;
      const left = deadline - clock.nowMs();
      if (left <= 0) {
        throw new FsjobError('TIMEOUT', `job ${id} has no receipt yet after ${options.timeoutMs ?? 0} ms of waiting; it is still unfinished (fsjob status ${id} says where it is)`, {
          jobId: id,
          jobIds: [id],
          path: files.dir,
        });
      }
      await waker.sleep(Math.min(pollMs, left), options.signal);
    }
  } finally {
    stopNotice?.();
    waker.close();
  }
}

/** Options of `readLogs`. */
export interface LogOptions {
  /** @default 'stdout' */
  stream?: 'stdout' | 'stderr';
  /** Keep reading new bytes until the job has a receipt. @default false */
  follow?: boolean;
  signal?: AbortSignal;
  /** @default WAIT_POLL_MS */
  pollMs?: number;
  /**
   * Also yield a chunk with `dropped` where the consumer discarded bytes of a
   * finished job's output (the receipt says `truncated`). @default false
   */
  gaps?: boolean;
}

/** Bytes of a job's output, as `readLogs` yields them. */
export interface LogChunk {
  /** The generation whose stdout.<g> / stderr.<g> these bytes come from. */
  gen: number;
  bytes: Buffer;
  /**
   * Only on a gap chunk (empty `bytes`, `gaps` option): how many bytes the
   * consumer discarded at this place in the stream, null when the total is
   * unknown (RCPT-5: the owner died, or EXEC-12 stopped waiting for the pipe).
   */
  dropped?: number | null;
}

/** Where a finished stream's bytes were dropped (EXEC-17: after, before or amid the kept bytes, by output_keep); none when not truncated. */
function gapOf(receipt: ReceiptRecord | undefined, keep: OutputKeep, stream: 'stdout' | 'stderr', gen: number): { at: number; dropped: number | null } | undefined {
  const summary = receipt?.[stream];
  if (summary === null || summary === undefined || summary.gen !== gen || !summary.truncated) return undefined;
  const dropped = summary.bytes_total === null ? null : summary.bytes_total - summary.bytes_kept;
  return { at: gapOffset(keep, summary.bytes_kept), dropped };
}

/** The generation whose output to show: the one the receipt reports (RCPT-5), else the latest with an output file. */
async function outputGen(queue: Queue, files: JobFiles, stream: 'stdout' | 'stderr'): Promise<number | undefined> {
  if (files.receipt) {
    const receipt = await readJobRecord(queue, files, 'receipt');
    const summary = receipt.ok ? receipt.value[stream] : null;
    if (summary !== null && summary !== undefined) return summary.gen;
  }
  const gens = stream === 'stdout' ? files.stdouts : files.stderrs;
  return gens.size === 0 ? undefined : Math.max(...gens);
}

/**
 * The output of a job: the bytes of `stdout.<g>` (or `stderr.<g>`) of the
 * generation the receipt names, else of the latest generation that has one.
 * Without `follow`, yields that file once (nothing when there is no output
 * yet). With `follow`, yields new bytes as they are appended, moves to a
 * newer generation's file when a retry starts one (a chunk with the new
 * `gen`), and ends once the job has a receipt and its output was read to the
 * end (RCPT-2 makes the output complete before the receipt). Files are read
 * with SEC-2..SEC-4 (no symlink, no FIFO, at most OUTPUT_MAX).
 */
export async function* readLogs(queue: Queue, id: string, options: LogOptions = {}): AsyncGenerator<LogChunk> {
  assertQueue(queue, 'readLogs');
  checkOptionsObject(options, 'readLogs');
  checkChoice(options, 'readLogs', 'stream', ['stdout', 'stderr']);
  checkBoolean(options, 'readLogs', 'follow');
  checkBoolean(options, 'readLogs', 'gaps');
  checkSignal(options, 'readLogs', 'signal');
  checkInteger(options, 'readLogs', 'pollMs', 1, Number.MAX_SAFE_INTEGER);
  const stream = options.stream ?? 'stdout';
  const pollMs = options.pollMs ?? WAIT_POLL_MS;
  let files = await findJob(queue, id);
  const waker = options.follow === true ? new Waker(files.dir) : undefined;
  let gen: number | undefined;
  let offset = 0;
  try {
    for (;;) {
      throwIfAborted(options.signal);
      // The receipt is looked at before the output is read: if it existed
      // then, this read is the last one and sees every byte.
      const finished = files.receipt;
      const target = await outputGen(queue, files, stream);
      if (target !== undefined) {
        if (target !== gen) {
          gen = target;
          offset = 0;
        }
        const bytes = await readBounded(queue.paths.jobFile(id, `${stream}.${target}`), OUTPUT_MAX, queue.fsOptions);
        if (bytes.length < offset) offset = 0; // never happens to an append-only file; start over if it does
        const receipt = finished && options.gaps === true ? await readJobRecord(queue, files, 'receipt') : undefined;
        const spec = receipt?.ok === true ? await readJobRecord(queue, files, 'spec') : undefined;
        const keep = outputKeepOf(spec?.ok === true ? spec.value : undefined);
        const gap = receipt?.ok === true ? gapOf(receipt.value, keep, stream, target) : undefined;
        if (gap !== undefined && gap.at >= offset && gap.at <= bytes.length) {
          if (gap.at > offset) yield { gen: target, bytes: bytes.subarray(offset, gap.at) };
          yield { gen: target, bytes: Buffer.alloc(0), dropped: gap.dropped };
          offset = gap.at;
        }
        if (bytes.length > offset) {
          yield { gen: target, bytes: bytes.subarray(offset) };
          offset = bytes.length;
        }
      }
      if (waker === undefined || finished) return;
      await waker.sleep(pollMs, options.signal, FOLLOW_MIN_GAP_MS);
      try {
        files = await listJob(queue, id);
      } catch (error) {
        if (isFsjobError(error, 'NOT_FOUND')) throw vanished(queue, id, error);
        throw error;
      }
    }
  } finally {
    waker?.close();
  }
}
