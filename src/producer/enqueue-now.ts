/**
 * Steps 2 to 8 of spec/producer.md for an `enqueue` alone in its process,
 * in one synchronous call: the calls of enqueue.ts's stage,
 * holdIndexPublish and makeDurable, in their order, with their refusals.
 *
 * Why a road of its own: when at most one operation of this process is in
 * flight, every fsync of an enqueue already runs inline (src/fs/flush.ts)
 * and every other call is synchronous too, but each was reached through an
 * `await` of a promise settled at once: 55 promises per job, each an
 * allocation, a microtask and a resumption, mostly in V8's interpreter over
 * a few hundred jobs (spec/design-producer-costs.md, the producer's pass).
 * The event loop waits exactly as long as before: this road is taken only
 * where the fsyncs, the only calls that wait for the disk, would have run
 * inline anyway.
 *
 * The road is taken only for a job without a dedupe key, dependencies or a
 * hold (those steps read and link other records: enqueue.ts's road), in a
 * queue whose tmp/, jobs/ and ready/ are held open (open-dir.ts: no test
 * seam, /proc/self/fd names entries). It records how far it got
 * (`job.now`), so that on a failure its caller undoes what it staged
 * (ENQ-6) or judges the rename's outcome, with enqueue.ts's own code.
 * test/producer/enqueue-now.test.ts runs each case on both roads.
 */
import { fsyncSync } from 'node:fs';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { inlineNow } from '../fs/flush.ts';
import { closeQuietly, createNow, moveNow } from '../fs/held-now.ts';
import { wrapIo } from '../fs/io-error.ts';
import { writeAllNow } from '../fs/publish-now.ts';
import { OpenDir } from '../fs/safefs.ts';
import { readyEntryName } from '../model/layout.ts';
import type { Queue } from '../model/queue.ts';
import { queueDir } from '../model/queue-dirs.ts';
import type { Pending } from './pending.ts';

/**
 * Publishes `job` and makes it durable (ENQ-4), synchronously, when the road
 * is open; false, with nothing done, when it is not. Throws what the steps
 * throw, with `job.now` saying how far it got.
 */
export function enqueueNow(queue: Queue, job: Pending): boolean {
  const { spec } = job;
  if (spec.dedupe !== null || spec.after !== undefined || spec.hold === true || !inlineNow()) return false;
  // SEC-2 before the first write, in stage()'s order: a symlinked jobs/ or
  // ready/ refuses the job with nothing staged (opening the handle judges it).
  const jobs = queueDir(queue, 'jobs');
  const ready = queueDir(queue, 'ready');
  const tmp = queueDir(queue, 'tmp');
  if (!(jobs instanceof OpenDir && ready instanceof OpenDir && tmp instanceof OpenDir)) return false;
  job.now = 'nothing';
  const { id } = job;
  // Step 2 (PUB-8): tmp/<id>/ made and held.
  let dir: OpenDir;
  try {
    dir = tmp.makeChild(id);
  } catch (error) {
    // As stage(): an IO failure after the mkdir leaves a directory that is ours.
    if (isFsjobError(error, 'IO')) job.now = 'staged';
    throw isFsjobError(error, 'EXISTS') ? stagingTaken(job) : error;
  }
  job.now = 'staged';
  try {
    stageFiles(dir, job);
    // Step 6 (ENQ-2): the index entry, not fsynced (READY-4).
    closeQuietly(createNow(ready, readyEntryName(spec.priority, id)));
    // Step 7 (ENQ-3): the rename publishes; never over an existing jobs/<id>.
    job.now = 'moving';
    moveNow(tmp, id, jobs, id);
    job.now = 'renamed';
  } finally {
    dir.close();
  }
  // Step 8 (ENQ-4): jobs/ fsynced after the rename; tmp/'s first, a SHOULD (PUB-9) whose failure fails nothing.
  try {
    tmp.check();
    fsyncSync(tmp.fd);
  } catch {
    // PUB-9 is a SHOULD: the staged name is gone from tmp/ either way once jobs/ is durable.
  }
  jobs.check();
  fsyncSync(jobs.fd);
  return true;
}

/**
 * Steps 3 and 4 (PUB-7): stdin and spec.json created exclusively and
 * written, then each fsynced and closed and the staged directory fsynced,
 * every one of them tried, the first failure thrown (stage()'s order).
 */
function stageFiles(dir: OpenDir, job: Pending): void {
  const files: { name: string; fd: number }[] = [];
  try {
    if (job.stdin !== null) files.push({ name: 'stdin', fd: writeDataFileNow(dir, 'stdin', job.stdin) });
    files.push({ name: 'spec.json', fd: writeDataFileNow(dir, 'spec.json', job.specBytes) });
  } catch (error) {
    for (const file of files) closeQuietly(file.fd);
    throw error;
  }
  let failure: { error: unknown } | undefined;
  for (const file of files) {
    try {
      fsyncSync(file.fd);
    } catch (error) {
      failure ??= { error: wrapIo(error, dir.entry(file.name), 'fsync of', 'PUB-7') };
    } finally {
      closeQuietly(file.fd);
    }
  }
  try {
    dir.check();
    fsyncSync(dir.fd);
  } catch (error) {
    failure ??= { error: wrapIo(error, dir.path, 'fsync of directory', 'PUB-5') };
  }
  if (failure !== undefined) throw failure.error;
}

/** writeDataFile (enqueue.ts), synchronously: the descriptor to fsync and close. */
export function writeDataFileNow(dir: OpenDir, name: string, bytes: Uint8Array): number {
  const fd = createNow(dir, name);
  try {
    writeAllNow(fd, bytes);
  } catch (error) {
    closeQuietly(fd);
    throw wrapIo(error, dir.entry(name), 'writing', 'PUB-7');
  }
  return fd;
}

/** A directory already at tmp/<id> is not ours: refused, never reused or removed (both roads). */
export function stagingTaken(job: Pending): FsjobError {
  return new FsjobError('EXISTS', `${job.staging} already exists although ${job.id} is a fresh id; something else uses that name. Remove it if it is stale (TEMP-1)`, {
    path: job.staging,
    jobId: job.id,
    clause: 'ENQ-6',
  });
}
