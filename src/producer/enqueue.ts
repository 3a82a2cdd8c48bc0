/**
 * Enqueue (spec/producer.md): stage the whole job in tmp/<id>/, then rename
 * it into jobs/. The rename is the commit point (ENQ-3); the id is reported
 * only after jobs/ is fsynced (ENQ-4). A failure before the rename removes
 * what was staged (ENQ-6); a crash leaves staging that spec/recovery-and-gc.md removes.
 */
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { wrapIo } from '../fs/io-error.ts';
import { gatedName, readyEntryName } from '../model/layout.ts';
import { createReadyEntry } from '../model/ready.ts';
import { beginOperation, Dir, dirPresent, ensurePrivateDir, moveIn, OpenDir, removeTree, SharedSync, together, writeAll, PRIVATE_FILE_MODE, type SafeHandle } from '../fs/safefs.ts';
import { encodeBuiltSpec, type JobRequest, type SpecRecord } from '../records/codec.ts';
import { queueDir } from '../model/queue-dirs.ts';
import { DEDUPE_STAGE_MAX, DELAY_MAX } from '../base/constants.ts';
import { selfIdentity, type Identity } from '../model/identity.ts';
import { dedupeHeld, holdDir, takeHold } from '../model/holds.ts';
import { dependenciesOf, dependencyState, heldUpstream } from '../model/gates.ts';
import { deriveStatus, listJob, type JobStatus } from '../model/job.ts';
import { assertQueue, locateJob, type Queue } from '../model/queue.ts';
import type { Clock } from '../base/clock.ts';
import { monotonicMs, systemClock } from '../base/clock.ts';
import { newJobIdStamp } from './id.ts';
import { checkNormalizeOptions, normalizeChecked, normalizeRequest, parseRequest, specFromRequest, type NormalizeOptions, type NormalizedRequest } from './request.ts';
import { plainPayload } from '../records/raw-json.ts';
import { enqueueNow, stagingTaken, writeDataFileNow } from './enqueue-now.ts';
import type { Pending } from './pending.ts';
import { closeQuietly, createNow, moveNow } from '../fs/held-now.ts';
import { directHandle } from '../fs/seam.ts';

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
  /** Published gated, at jobs/<id>.gated (GATE-1): held, or waiting for a dependency. */
  gated: boolean;
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

/**
 * The bytes of the spec record (REC-1), built once and written once
 * (encodeBuiltSpec: a payload job's spec as one native stringify with its
 * payload's text spliced in, records/spec-bytes.ts; anything else walked
 * by encodeBuilt). Every member comes from the request, which ENQ-1 checked
 * against its schema (the same definitions the spec's schema uses), or from
 * this producer: the id and created_ms (checked where they are made, id.ts),
 * its identity (checked in full with its first spec) and the cwd SPEC-2
 * fills in when the request has none, checked here by hand.
 */
function encodeSpec(spec: SpecRecord, source: string): Buffer {
  try {
    checkCwd(spec.cwd);
    return encodeBuiltSpec(spec, { expectedJobId: spec.id });
  } catch (error) {
    if (!isFsjobError(error)) throw error;
    // Everything in the spec came from the request (or the defaults), so a spec
    // that cannot be encoded is a request that cannot be enqueued (ENQ-1).
    throw new FsjobError('USAGE', `${source} cannot become a spec record (ENQ-1): ${error.message}`, { clause: error.clause ?? 'ENQ-1', cause: error });
  }
}

/** common.schema.json#/$defs/cwd for a cwd this producer filled in (SPEC-2): absolute, 1 to 4096 bytes, no NUL. */
function checkCwd(cwd: string): void {
  if (!cwd.startsWith('/') || cwd.includes('\0') || Buffer.byteLength(cwd) > 4096) {
    throw new FsjobError('INVALID_RECORD', `the default cwd ${JSON.stringify(cwd.slice(0, 200))} is not an absolute path of at most 4096 bytes without NUL`, { clause: 'REC-5' });
  }
}

/**
 * PUB-7: create a data file of a staged job exclusively and write all of it.
 * Resolves, once the bytes are written, to the handle to fsync and close:
 * the caller runs its fsync alongside the staging directory's
 * (spec/producer.md step 4 orders them before step 7, not against each
 * other). Wrapped in an object because an async function would wait for a
 * promise it returns.
 */
async function writeDataFile(dir: Dir, name: string, bytes: Uint8Array): Promise<{ handle: SafeHandle }> {
  // A held directory: created and written by the synchronous road's calls (no promise per step); fsynced by the caller.
  if (dir instanceof OpenDir) return { handle: directHandle(writeDataFileNow(dir, name, bytes)) };
  const handle = await dir.create(name, PRIVATE_FILE_MODE);
  try {
    await writeAll(handle, bytes);
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw wrapIo(error, dir.entry(name), 'writing', 'PUB-7');
  }
  return { handle };
}

/** PUB-7's fsync of a written data file, then its close (closed also when the fsync fails). */
function syncAndClose(dir: Dir, name: string, handle: SafeHandle): () => Promise<void> {
  return async () => {
    try {
      await handle.sync();
    } catch (error) {
      throw wrapIo(error, dir.entry(name), 'fsync of', 'PUB-7');
    } finally {
      await handle.close().catch(() => undefined);
    }
  };
}

/**
 * The holder's status (STATUS-1), and for a blocked one the held job up its
 * chain, for the refusal's advice; undefined when it cannot be told (staged
 * and not yet published, DEDUPE-3, or unreadable). Read only on this
 * refusal, never on the enqueue that takes the key.
 */
async function holderStatus(queue: Queue, id: string): Promise<{ status: JobStatus; heldUpstream?: string } | undefined> {
  try {
    const { status } = await deriveStatus(queue, await listJob(queue, id));
    const upstream = status === 'blocked' ? await heldUpstream(queue, id) : undefined;
    return { status, ...(upstream === undefined ? {} : { heldUpstream: upstream }) };
  } catch (error) {
    if (isFsjobError(error)) return undefined;
    throw error;
  }
}

/** What to do about a holder: a held one waits for a release that waiting never brings (HOLD-1), as does one blocked behind a held one. */
function holderAdvice(holder: string, seen: { status: JobStatus; heldUpstream?: string } | undefined): string {
  if (seen?.status === 'held') return `which is held (enqueued with --hold): it runs only once released, and waiting for it never ends; release it (fsjob release ${holder}) or cancel it (fsjob cancel ${holder})`;
  if (seen?.heldUpstream !== undefined) {
    return `which is blocked behind held job ${seen.heldUpstream}: it runs only once that one is released, and waiting for it never ends; release that one (fsjob release ${seen.heldUpstream}) or cancel this one (fsjob cancel ${holder})`;
  }
  return `which is not finished${seen === undefined ? '' : ` (${seen.status})`}; wait for it (fsjob wait ${holder}) or cancel it (fsjob cancel ${holder})`;
}

async function dedupeRefusal(queue: Queue, key: string, held: { n: number; hold?: { job_id: string } | undefined; findings: readonly { message: string }[] }): Promise<FsjobError> {
  const dir = holdDir(queue, 'dedupe', key);
  if (held.hold === undefined) {
    return new FsjobError(
      'DEDUPE_HELD',
      `dedupe key ${JSON.stringify(key)}: its highest hold ${dir}/${held.n}.json cannot be read (${held.findings[0]?.message ?? 'invalid'}), and a key is never taken on a guess (DEDUPE-2); check it with fsjob validate`,
      { path: `${dir}/${held.n}.json`, clause: 'DEDUPE-2' },
    );
  }
  const holder = held.hold.job_id;
  const seen = await holderStatus(queue, holder);
  return new FsjobError('DEDUPE_HELD', `dedupe key ${JSON.stringify(key)} is held by job ${holder}, ${holderAdvice(holder, seen)}, then enqueue again (DEDUPE-1)`, {
    jobId: holder,
    ...(seen === undefined ? {} : { jobStatus: seen.status }),
    path: `${dir}/${held.n}.json`,
    clause: 'DEDUPE-1',
  });
}

/** AFTER-2 before anything is written: no job named twice (the job itself cannot be named: its id is new). */
function checkAfter(spec: SpecRecord, source: string): void {
  if (spec.after === undefined) return;
  const seen = new Set<string>();
  for (const [index, dependency] of dependenciesOf(spec).entries()) {
    if (seen.has(dependency.job_id)) {
      throw new FsjobError('USAGE', `${source}: after names job ${dependency.job_id} twice (AFTER-2)`, { jobId: dependency.job_id, clause: 'AFTER-2', field: `/after/${index}/job_id` });
    }
    seen.add(dependency.job_id);
  }
}

/**
 * AFTER-2 and GATE-1: every dependency exists (GATE-4), and whether the job
 * goes to jobs/<id>.gated. A job that is not held and whose dependencies are
 * all satisfied now is published open: a satisfied dependency stays so.
 */
async function gateOf(queue: Queue, spec: SpecRecord, source: string): Promise<boolean> {
  let satisfied = true;
  for (const [index, dependency] of dependenciesOf(spec).entries()) {
    if ((await locateJob(queue, dependency.job_id)) === 'missing') {
      throw new FsjobError('NOT_FOUND', `${source}: after names job ${dependency.job_id}, which does not exist in ${queue.root} (AFTER-2: a job runs only after jobs published before it; fsjob status lists them)`, {
        jobId: dependency.job_id,
        path: queue.paths.job(dependency.job_id),
        clause: 'AFTER-2',
        field: `/after/${index}/job_id`,
      });
    }
    if (satisfied && (await dependencyState(queue, dependency)).kind !== 'satisfied') satisfied = false;
  }
  return spec.hold === true || !satisfied;
}

/**
 * Step 1's end and the id (LAYOUT-4): the spec record, checked and encoded
 * before anything is written. Synchronous, so jobs prepared one after another
 * get ids in that order (enqueueBatch relies on it for line order).
 */
export function prepare(queue: Queue, normalized: NormalizedRequest, producer: Identity, options: EnqueueOptions): Pending {
  const clock = options.clock ?? systemClock;
  const source = options.source ?? 'the request';
  const { id, ms } = newJobIdStamp(clock);
  const spec = specFromRequest(id, ms, normalized, producer);
  checkDelay(spec, source);
  checkAfter(spec, source);
  const specBytes = encodeSpec(spec, source);
  return { id, spec, specBytes, stdin: normalized.stdin, source, clock, staging: queue.paths.staging(id), readyEntry: `${queue.paths.dir('ready')}/${readyEntryName(spec.priority, id)}` };
}

/**
 * Steps 2 to 4: the staging directory and its files, each fsynced, and the
 * directory fsynced. On failure it removes what it staged (ENQ-6) and throws.
 */
export async function stage(queue: Queue, job: Pending): Promise<void> {
  // SEC-2 before the first write: a symlinked jobs/ or ready/ refuses the job
  // with nothing staged (tmp/ is checked by the mkdir below).
  queueDir(queue, 'jobs').check();
  queueDir(queue, 'ready').check();
  const { staging, id } = job;
  let staged = false;
  try {
    // Step 2 (PUB-8). A directory already at tmp/<id> is not ours: refuse, never reuse or remove it.
    let dir: Dir;
    try {
      dir = await makeStagingDir(queue, id);
    } catch (error) {
      // An IO failure after the mkdir (the chmod, the re-check) leaves a
      // directory that is ours; a refusal means what is there is not ours.
      if (isFsjobError(error, 'IO')) staged = true;
      throw isFsjobError(error, 'EXISTS') ? stagingTaken(job) : error;
    }
    job.stagingDir = dir;
    staged = true;
    // Steps 3 and 4: stdin and spec.json created exclusively and written
    // (PUB-7); their fsyncs and the staged directory's run together (flush.ts),
    // and all are done before anything below.
    const files: { name: string; handle: SafeHandle }[] = [];
    try {
      if (job.stdin !== null) files.push({ name: 'stdin', ...(await writeDataFile(dir, 'stdin', job.stdin)) });
      files.push({ name: 'spec.json', ...(await writeDataFile(dir, 'spec.json', job.specBytes)) });
    } catch (error) {
      for (const file of files) await file.handle.close().catch(() => undefined);
      throw error;
    }
    await together([...files.map((file) => syncAndClose(dir, file.name, file.handle)), () => syncStaged(dir)]);
  } catch (error) {
    job.stagingDir?.close();
    await unstage(queue, staged ? staging : undefined, undefined);
    throw error;
  }
}

/** PUB-5's fsync of the staged directory, its failure named as enqueue-now.ts names it. */
async function syncStaged(dir: Dir): Promise<void> {
  try {
    await dir.fsync();
  } catch (error) {
    throw wrapIo(error, dir.path, 'fsync of directory', 'PUB-5');
  }
}

/** Step 2: tmp/<id>/ made (PUB-8) and held; EXISTS when the name is taken. */
async function makeStagingDir(queue: Queue, id: string): Promise<Dir> {
  const tmp = queueDir(queue, 'tmp');
  if (tmp instanceof OpenDir) return tmp.makeChild(id);
  const staging = queue.paths.staging(id);
  if (!(await ensurePrivateDir(staging, queue.fsOptions))) throw new FsjobError('EXISTS', `${staging} already exists`, { path: staging });
  return tmp.child(id);
}

/**
 * Steps 5 to 7: the dedupe hold, the ready entry, the rename that publishes.
 * When this resolves the job is published but not yet durable (step 8). On
 * failure before the rename it removes what it staged (ENQ-6) and throws.
 */
export async function holdIndexPublish(queue: Queue, job: Pending): Promise<void> {
  const { spec, clock, staging, readyEntry, id } = job;
  let readyCreated = false;
  try {
    if (spec.after !== undefined || spec.hold === true) job.gated = await gateOf(queue, spec, job.source);
    // Step 5 (DEDUPE-2): after staging exists, so a rival producer sees our
    // hold as held while we are between here and the rename (DEDUPE-3).
    if (spec.dedupe !== null) {
      const key = spec.dedupe;
      job.holdTakenMono = monotonicMs(clock);
      const taken = await takeHold(queue, 'dedupe', key, (hold) => dedupeHeld(queue, hold, { clock }), { clock, jobId: id, gen: null });
      if (!taken.taken) throw await dedupeRefusal(queue, key, taken.current);
    }
    // Step 6 (ENQ-2): the index entry exists before the job does. Not fsynced:
    // a consumer rebuilds lost entries from jobs/ (READY-4).
    const ready = queueDir(queue, 'ready');
    if (ready instanceof OpenDir) closeQuietly(createNow(ready, readyEntryName(spec.priority, id)));
    else await createReadyEntry(queue, spec.priority, id);
    readyCreated = true;
    // DEDUPE-5: past DEDUPE_STAGE_MAX the hold no longer counts for other
    // producers (DEDUPE-3), so publishing now could share the key: refuse.
    if (job.holdTakenMono !== undefined && monotonicMs(clock) - job.holdTakenMono >= DEDUPE_STAGE_MAX) {
      throw new FsjobError('IO', `job ${id} was not published within DEDUPE_STAGE_MAX (${DEDUPE_STAGE_MAX} ms) of taking its dedupe key, so the key may be another job's now; nothing was published (DEDUPE-5)`, { jobId: id, clause: 'DEDUPE-5' });
    }
  } catch (error) {
    job.stagingDir?.close();
    await unstage(queue, staging, readyCreated ? readyEntry : undefined);
    throw error;
  }
  // Step 7 (ENQ-3): the rename publishes; moveIn refuses an existing jobs/<id>.
  // GATE-1: a gated job goes to jobs/<id>.gated, and neither name may exist.
  const name = job.gated === true ? gatedName(id) : id;
  const target = `${queue.paths.dir('jobs')}/${name}`;
  try {
    if (job.gated === true && (await dirPresent(queue.paths.job(id), queue.fsOptions))) {
      throw new FsjobError('EXISTS', `${queue.paths.job(id)} already exists; a staged job never shares its id. Pick a new id.`, { path: queue.paths.job(id), jobId: id, clause: 'GATE-1' });
    }
    const tmp = queueDir(queue, 'tmp');
    const jobs = queueDir(queue, 'jobs');
    if (tmp instanceof OpenDir && jobs instanceof OpenDir && job.stagingDir instanceof OpenDir) moveNow(tmp, id, jobs, name);
    else await moveIn(tmp, id, jobs, name, job.stagingDir instanceof OpenDir);
  } catch (error) {
    await afterFailedMove(queue, job, target, error);
  } finally {
    job.stagingDir?.close();
  }
}

/**
 * A rename (step 7) that reported a failure: when the staged directory is
 * still there or the target is not, nothing was published, so what was
 * staged is removed (ENQ-6) and the failure thrown. Otherwise the rename
 * happened although it reported a failure: the job is published, and step 8
 * decides whether it may be reported.
 */
async function afterFailedMove(queue: Queue, job: Pending, target: string, error: unknown): Promise<void> {
  const published = !(await dirPresent(job.staging, queue.fsOptions).catch(() => true)) && (await dirPresent(target, queue.fsOptions).catch(() => false));
  if (!published) {
    await unstage(queue, job.staging, job.readyEntry);
    throw error;
  }
}

/**
 * The fsync of step 8, shared (SharedSync) by every job of this queue object
 * renamed before it began: concurrent enqueues and the lines of a batch wait
 * for one fsync of jobs/ and tmp/ together instead of one each. A failure of
 * tmp/'s (a SHOULD, PUB-9) does not fail the jobs; jobs/'s does (ENQ-4).
 */
const stepEight = new WeakMap<Queue, SharedSync>();

/** The SharedSync of a queue object's step 8 (tests count its runs). */
export function publicationSync(queue: Queue): SharedSync {
  let shared = stepEight.get(queue);
  if (shared === undefined) {
    shared = new SharedSync(() => {
      const jobs = queueDir(queue, 'jobs');
      const tmp = queueDir(queue, 'tmp');
      return together([() => tmp.fsync().catch(() => undefined), () => jobs.fsync()]);
    });
    stepEight.set(queue, shared);
  }
  return shared;
}

/** Step 8 (ENQ-4): resolves once jobs/ was fsynced after the job's rename; else the job is published but not reported. */
export async function makeDurable(queue: Queue, job: Pending): Promise<void> {
  try {
    await publicationSync(queue).after();
  } catch (error) {
    throw notDurable(queue, job, error);
  }
}

/** ENQ-4: the job is visible but not proven durable, so it must not be reported as accepted. */
function notDurable(queue: Queue, job: Pending, error: unknown): FsjobError {
  return new FsjobError(
    'IO',
    `job ${job.id} was published in ${queue.paths.job(job.id)} but fsync of jobs/ failed (ENQ-4), so it may not survive a crash: ${error instanceof Error ? error.message : String(error)}. Check the disk; the job stays queued unless it vanished (fsjob status ${job.id})`,
    { path: queue.paths.dir('jobs'), jobId: job.id, clause: 'ENQ-4', errno: isFsjobError(error) ? (error.errno ?? 'EIO') : 'EIO', cause: error },
  );
}

/**
 * Enqueue (spec/producer.md), steps 2 to 8, for a request already normalized (step 1).
 * Resolves only once the job is published and jobs/ is fsynced.
 */
export async function publishJob(queue: Queue, normalized: NormalizedRequest, options: EnqueueOptions = {}): Promise<Enqueued> {
  // One operation (src/fs/flush.ts): alone in its process, its fsyncs need no thread hand-off.
  const operation = beginOperation();
  try {
    const job = prepare(queue, normalized, await selfIdentity(), options);
    let now: boolean;
    try {
      now = enqueueNow(queue, job);
    } catch (error) {
      await afterNowFailure(queue, job, error);
      now = false; // published although its rename reported a failure: step 8 by the road below
    }
    if (!now) {
      if (job.now === undefined) {
        await stage(queue, job);
        await holdIndexPublish(queue, job);
      }
      await makeDurable(queue, job);
    }
    return { id: job.id, spec: plainPayload(job.spec), gated: job.gated === true };
  } finally {
    operation();
  }
}

/**
 * A failure of the synchronous road (enqueue-now.ts), handled as the steps
 * of this file handle their own: what was staged removed (ENQ-6), a rename
 * that reported a failure judged by its outcome (returns when the job was
 * published), a failed fsync of jobs/ reported as ENQ-4.
 */
async function afterNowFailure(queue: Queue, job: Pending, error: unknown): Promise<void> {
  switch (job.now) {
    case 'staged':
      await unstage(queue, job.staging, undefined);
      throw error;
    case 'moving':
      return afterFailedMove(queue, job, queue.paths.job(job.id), error);
    case 'renamed':
      throw notDurable(queue, job, error);
    default:
      throw error;
  }
}

/**
 * ENQ-6: remove what a failed enqueue staged. The dedupe hold needs no
 * removal: without the staging directory it no longer holds (DEDUPE-3).
 * Cleanup failures are swallowed: the original failure is what the caller
 * must see, and leftovers are stale temporaries spec/recovery-and-gc.md removes.
 */
async function unstage(queue: Queue, staging: string | undefined, readyEntry: string | undefined): Promise<void> {
  if (staging !== undefined) await removeTree(staging, queue.fsOptions).catch(() => undefined);
  if (readyEntry !== undefined) await removeTree(readyEntry, queue.fsOptions).catch(() => undefined);
}

/**
 * Enqueue one job (spec/producer.md): validate and default the request (ENQ-1,
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
  assertQueue(queue, 'enqueue');
  checkNormalizeOptions(options, 'enqueue');
  // Bytes are a request file's content (REQ-1): checked as the validator checks them.
  const normalized =
    request instanceof Uint8Array ? normalizeChecked(parseRequest(request, { source: options.source ?? 'the request' }), options) : normalizeRequest(request, options);
  return publishJob(queue, normalized, options);
}
