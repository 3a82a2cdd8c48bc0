/**
 * Enqueue (spec section 6.2): stage the whole job in tmp/<id>/, then rename
 * it into jobs/. The rename is the commit point (ENQ-3); the id is reported
 * only after jobs/ is fsynced (ENQ-4). A failure before the rename removes
 * what was staged (ENQ-6); a crash leaves staging that section 12 removes.
 */
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { wrapIo } from '../fs/io-error.ts';
import { readyEntryName } from '../model/layout.ts';
import { createReadyEntry } from '../model/ready.ts';
import { checkDirInside, createExclusive, dirPresent, ensurePrivateDir, fsyncDir, removeTree, later, renameNoReplace, settleAll, writeAll, PRIVATE_FILE_MODE } from '../fs/safefs.ts';
import { encodeRecord, type JobRequest, type SpecRecord } from '../records/codec.ts';
import { DEDUPE_STAGE_MAX, DELAY_MAX } from '../base/constants.ts';
import { selfIdentity } from '../model/identity.ts';
import { dedupeHeld, holdDir, takeHold } from '../model/holds.ts';
import type { Queue } from '../model/queue.ts';
import type { Clock } from '../base/clock.ts';
import { monotonicMs, systemClock } from '../base/clock.ts';
import { newJobIdStamp } from './id.ts';
import { normalizeChecked, normalizeRequest, parseRequest, specFromRequest, type NormalizeOptions, type NormalizedRequest } from './request.ts';

/** Options of `enqueue`: where defaults come from (cwd, stdin) and the clock. */
export interface EnqueueOptions extends NormalizeOptions {
  /** @default systemClock: the id's time and created_ms. */
  clock?: Clock;
}

/** A published job: `enqueue` resolves to it once the job is durable (ENQ-4). */
export interface Enqueued {
  id: string;
  /** The spec record as published in jobs/<id>/spec.json. */
  spec: SpecRecord;
}


/** DELAY-1: a delayed start at most DELAY_MAX after created_ms, and (SHOULD) before the queue deadline makes the job expire. */
function checkDelay(spec: SpecRecord, source: string): void {
  const notBefore = spec.not_before_ms;
  if (notBefore === undefined || notBefore === null) return;
  if (notBefore > spec.created_ms + DELAY_MAX) {
    throw new FsjobError('USAGE', `${source}: not_before_ms ${notBefore} lies more than DELAY_MAX (${DELAY_MAX} ms, 365 days) after the job's creation (DELAY-1)`, { clause: 'DELAY-1' });
  }
  if (spec.queue_deadline_ms !== null && notBefore >= spec.created_ms + spec.queue_deadline_ms) {
    throw new FsjobError('USAGE', `${source}: not_before_ms lies at or after the queue deadline (created_ms + queue_deadline_ms), so the job would expire before it may start (DELAY-1)`, { clause: 'DELAY-1' });
  }
}

/** VER-4 through encodeRecord: the record is checked against its schema before a byte is written. */
function encodeSpec(spec: SpecRecord, source: string): Buffer {
  try {
    return encodeRecord('spec', spec, { expectedJobId: spec.id });
  } catch (error) {
    if (!isFsjobError(error)) throw error;
    // Everything in the spec came from the request (or the defaults), so a spec
    // that cannot be encoded is a request that cannot be enqueued (ENQ-1).
    throw new FsjobError('USAGE', `${source} cannot become a spec record (ENQ-1): ${error.message}`, { clause: error.clause ?? 'ENQ-1', cause: error });
  }
}

/**
 * PUB-7: create a data file of a staged job exclusively and write all of it.
 * Resolves, once the bytes are written, to the pending fsync (which closes
 * the file): the caller runs it alongside the staging directory's fsync and
 * awaits both before the rename (section 6.2 step 4 orders them before step 7,
 * not against each other). Wrapped in an object because an async function
 * would wait for a promise it returns.
 */
async function writeDataFile(queue: Queue, dir: string, name: string, bytes: Uint8Array): Promise<{ synced: Promise<void> }> {
  const handle = await createExclusive(dir, name, PRIVATE_FILE_MODE, queue.fsOptions);
  const target = `${dir}/${name}`;
  const closeQuietly = () => handle.close().catch(() => undefined);
  try {
    await writeAll(handle, bytes);
  } catch (error) {
    await closeQuietly();
    throw wrapIo(error, target, 'writing', 'PUB-7');
  }
  const synced = later(
    handle.sync().then(closeQuietly, async (error: unknown) => {
      await closeQuietly();
      throw wrapIo(error, target, 'fsync of', 'PUB-7');
    }),
  );
  return { synced };
}


function dedupeRefusal(queue: Queue, key: string, held: { n: number; hold?: { job_id: string } | undefined; findings: readonly { message: string }[] }): FsjobError {
  const dir = holdDir(queue, 'dedupe', key);
  if (held.hold === undefined) {
    return new FsjobError(
      'DEDUPE_HELD',
      `dedupe key ${JSON.stringify(key)}: its highest hold ${dir}/${held.n}.json cannot be read (${held.findings[0]?.message ?? 'invalid'}), and a key is never taken on a guess (DEDUPE-2); check it with fsjob validate`,
      { path: `${dir}/${held.n}.json`, clause: 'DEDUPE-2' },
    );
  }
  const holder = held.hold.job_id;
  return new FsjobError(
    'DEDUPE_HELD',
    `dedupe key ${JSON.stringify(key)} is held by job ${holder}, which is not finished (DEDUPE-1); wait for it (fsjob wait ${holder}) or cancel it (fsjob cancel ${holder}), then enqueue again`,
    { jobId: holder, path: `${dir}/${held.n}.json`, clause: 'DEDUPE-1' },
  );
}

/**
 * Section 6.2, steps 2 to 8, for a request already normalized (step 1).
 * Resolves only once the job is published and jobs/ is fsynced.
 */
export async function publishJob(queue: Queue, normalized: NormalizedRequest, options: EnqueueOptions = {}): Promise<Enqueued> {
  const clock = options.clock ?? systemClock;
  const source = options.source ?? 'the request';
  const producer = await selfIdentity();
  const { id, ms } = newJobIdStamp(clock);
  const spec = specFromRequest(id, ms, normalized, producer);
  checkDelay(spec, source);
  const specBytes = encodeSpec(spec, source);

  // SEC-2 before the first write: a symlinked jobs/ or ready/ refuses the job
  // with nothing staged (tmp/ is checked by the mkdir below).
  await checkDirInside(queue.paths.dir('jobs'), queue.fsOptions);
  await checkDirInside(queue.paths.dir('ready'), queue.fsOptions);

  const staging = queue.paths.staging(id);
  const jobDir = queue.paths.job(id);
  const readyDir = queue.paths.dir('ready');
  const readyName = readyEntryName(spec.priority, id);
  let staged = false;
  let readyCreated = false;
  /** When the dedupe hold was taken, on the monotonic clock (DEDUPE-5). */
  let holdTakenMono: number | undefined;
  try {
    // Step 2 (PUB-8). A directory already at tmp/<id> is not ours: refuse, never reuse or remove it.
    let created: boolean;
    try {
      created = await ensurePrivateDir(staging, queue.fsOptions);
    } catch (error) {
      // An IO failure after the mkdir (the chmod, the re-check) leaves a
      // directory that is ours; a refusal means what is there is not ours.
      if (isFsjobError(error, 'IO')) staged = true;
      throw error;
    }
    if (!created) {
      throw new FsjobError('EXISTS', `${staging} already exists although ${id} is a fresh id; something else uses that name. Remove it if it is stale (TEMP-1)`, {
        path: staging,
        jobId: id,
        clause: 'ENQ-6',
      });
    }
    staged = true;
    // Steps 3 and 4: stdin and spec.json created exclusively and written
    // (PUB-7); their fsyncs and the staged directory's run at once, and all
    // are done before anything below.
    const syncs: Promise<void>[] = [];
    try {
      if (normalized.stdin !== null) syncs.push((await writeDataFile(queue, staging, 'stdin', normalized.stdin)).synced);
      syncs.push((await writeDataFile(queue, staging, 'spec.json', specBytes)).synced);
      syncs.push(later(fsyncDir(staging, queue.fsOptions)));
    } catch (error) {
      await Promise.allSettled(syncs);
      throw error;
    }
    await settleAll(syncs);
    // Step 5 (DEDUPE-2): after staging exists, so a rival producer sees our
    // hold as held while we are between here and the rename (DEDUPE-3).
    if (spec.dedupe !== null) {
      const key = spec.dedupe;
      holdTakenMono = monotonicMs(clock);
      const taken = await takeHold(queue, 'dedupe', key, (hold) => dedupeHeld(queue, hold, { clock }), { clock, jobId: id, gen: null });
      if (!taken.taken) throw dedupeRefusal(queue, key, taken.current);
    }
    // Step 6 (ENQ-2): the index entry exists before the job does. Not fsynced:
    // a consumer rebuilds lost entries from jobs/ (READY-4).
    await createReadyEntry(queue, spec.priority, id);
    readyCreated = true;
    // DEDUPE-5: past DEDUPE_STAGE_MAX the hold no longer counts for other
    // producers (DEDUPE-3), so publishing now could share the key: refuse.
    if (holdTakenMono !== undefined && monotonicMs(clock) - holdTakenMono > DEDUPE_STAGE_MAX) {
      throw new FsjobError('IO', `job ${id} was not published within DEDUPE_STAGE_MAX (${DEDUPE_STAGE_MAX} ms) of taking its dedupe key, so the key may be another job's now; nothing was published (DEDUPE-5)`, { jobId: id, clause: 'DEDUPE-5' });
    }
  } catch (error) {
    await unstage(queue, staged ? staging : undefined, readyCreated ? `${readyDir}/${readyName}` : undefined);
    throw error;
  }

  // Steps 7 and 8 (ENQ-3, ENQ-4): the rename publishes; renameNoReplace
  // refuses an existing jobs/<id> and fsyncs jobs/ (then tmp/).
  try {
    await renameNoReplace(staging, jobDir, queue.fsOptions);
  } catch (error) {
    const published = !(await dirPresent(staging, queue.fsOptions).catch(() => true)) && (await dirPresent(jobDir, queue.fsOptions).catch(() => false));
    if (!published) {
      await unstage(queue, staging, `${readyDir}/${readyName}`);
      throw error;
    }
    // The rename happened. If only the fsync of tmp/ failed, jobs/ is durable
    // and the job is accepted; if jobs/ could not be fsynced, the job is
    // visible but not proven durable, so it must not be reported as accepted.
    if (isFsjobError(error) && error.path === queue.paths.dir('tmp')) return { id, spec };
    throw new FsjobError(
      'IO',
      `job ${id} was published in ${jobDir} but fsync of jobs/ failed (ENQ-4), so it may not survive a crash: ${error instanceof Error ? error.message : String(error)}. Check the disk; the job stays queued unless it vanished (fsjob status ${id})`,
      { path: queue.paths.dir('jobs'), jobId: id, clause: 'ENQ-4', errno: isFsjobError(error) ? (error.errno ?? 'EIO') : 'EIO', cause: error },
    );
  }
  return { id, spec };
}

/**
 * ENQ-6: remove what a failed enqueue staged. The dedupe hold needs no
 * removal: without the staging directory it no longer holds (DEDUPE-3).
 * Cleanup failures are swallowed: the original failure is what the caller
 * must see, and leftovers are stale temporaries section 12 removes.
 */
async function unstage(queue: Queue, staging: string | undefined, readyEntry: string | undefined): Promise<void> {
  if (staging !== undefined) await removeTree(staging, queue.fsOptions).catch(() => undefined);
  if (readyEntry !== undefined) await removeTree(readyEntry, queue.fsOptions).catch(() => undefined);
}

/**
 * Enqueue one job (section 6.2): validate and default the request (ENQ-1,
 * SPEC-2), stage it, take its dedupe key, index it, publish it. Resolves to
 * the id and the spec once the job is durable (ENQ-4). `request` is a
 * request object (JobRequest), or the bytes of a request file (REQ-1).
 *
 * Throws USAGE (or UNSUPPORTED_VERSION, TOO_LARGE) for an invalid request
 * with nothing written; DEDUPE_HELD naming the holding job; SYMLINK_REFUSED
 * and the other safefs refusals for an unsafe queue; IO (with errno) when the
 * filesystem fails, after removing what was staged (ENQ-6).
 */
export async function enqueue(queue: Queue, request: JobRequest | Uint8Array, options: EnqueueOptions = {}): Promise<Enqueued> {
  // Bytes are a request file's content (REQ-1): checked as the validator checks them.
  const normalized =
    request instanceof Uint8Array ? normalizeChecked(parseRequest(request, { source: options.source ?? 'the request' }), options) : normalizeRequest(request, options);
  return publishJob(queue, normalized, options);
}

/** One line of `enqueueBatch`: the id of the job it published, or the error that refused it. */
export type BatchResult = { line: number; id: string } | { line: number; error: FsjobError };

/** Options of `enqueueBatch`: those of `enqueue`, less `stdin` and `source` (each line is its own request). */
export interface BatchOptions extends Omit<EnqueueOptions, 'stdin' | 'source'> {
  /** Called with each result as soon as it is known (the CLI prints ids as they are accepted). */
  onResult?: (result: BatchResult) => void;
}

/**
 * One job per line, each line a request (REQ-1). Lines are numbered from 1;
 * blank lines are skipped. A bad line (invalid, refused, failed) yields
 * `{ line, error }` and does not stop the others; every other line yields
 * `{ line, id }`. Errors that are not FsjobErrors (bugs) propagate.
 */
export async function enqueueBatch(
  queue: Queue,
  lines: Iterable<string> | AsyncIterable<string>,
  options: BatchOptions = {},
): Promise<BatchResult[]> {
  const results: BatchResult[] = [];
  let line = 0;
  for await (const text of lines) {
    line += 1;
    if (text.trim() === '') continue;
    const source = `batch line ${line}`;
    let result: BatchResult;
    try {
      const request = parseRequest(Buffer.from(text, 'utf8'), { source });
      const { id } = await publishJob(queue, normalizeChecked(request, { ...options, source }), { ...options, source });
      result = { line, id };
    } catch (error) {
      if (!isFsjobError(error)) throw error;
      result = { line, error };
    }
    results.push(result);
    options.onResult?.(result);
  }
  return results;
}
