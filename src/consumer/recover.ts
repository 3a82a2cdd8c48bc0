/**
 * One-shot recovery of a whole queue (spec/recovery-and-gc.md): what `fsjob
 * recover` runs.
 *
 * 1. RECOV-1 on every orphaned job: the claim of a dead owner is broken only
 *    once its execution is proven stopped (a matching same-host group is
 *    stopped first: TERM, RECOVER_GRACE, KILL); then generation g+1 is
 *    claimed and the job is finished (CLAIM-6.0..6.4, notably `lost` when no
 *    attempt remains) or given back (end record `released`). What cannot be
 *    proven is left alone and reported (seed 000's quarantine, seed 004's
 *    preserved unproven resources).
 * 2. READY-4: every job without a receipt gets a ready entry; READY-3: the
 *    entries of finished jobs, and stale entries of missing jobs, go.
 * 3. TEMP-1: temporary files and tmp/ entries older than TEMP_MAX_AGE go.
 * 4. WORKER-1: registrations whose owner is dead go.
 * 5. GC-2: holds below the highest hold of their key go.
 *
 * Nothing else is removed: no job, no receipt, no record of an open claim.
 * An entry whose recovery failed (the filesystem refused a write: ENOSPC,
 * EROFS, EACCES) is listed apart from those left alone by design, so that an
 * operator (and `fsjob recover`'s exit status) can tell "nothing to do" from
 * "could not do it": a full disk must not read as a recovered queue.
 */
import path from 'node:path';
import { CallerCallbacks } from '../base/callbacks.ts';
import { TEMP_MAX_AGE } from '../base/constants.ts';
import { FsjobError, errnoOf, isFsjobError } from '../base/errors.ts';
import { judgeOwner } from '../model/identity.ts';
import { deriveStatus, listJob, type JobFiles } from '../model/job.ts';
import { isJobId, tmpEntryJobId } from '../model/layout.ts';
import { locateJob, type Queue } from '../model/queue.ts';
import { staleReadyEntries } from '../model/ready.ts';
import { readRecord } from '../records/codec.ts';
import { listDir, removeTree, statEntry, type DirEntry } from '../fs/safefs.ts';
import { claimJob } from './claim.ts';
import { makeContext, openWith, type ConsumerOptions, type Context } from './context.ts';
import { rebuildReady } from './select.ts';
import { GATED_SUFFIX, WORKER_ID_PATTERN, jobIdOfDirName, parseHoldNumber } from '../records/names.ts';

/** What `recover` did (spec/recovery-and-gc.md), and what it left alone and why. */
export interface RecoverReport {
  queue: string;
  /** Claims of dead owners that were broken (a new generation claimed). */
  claimsBroken: { job_id: string; gen: number; reason: string }[];
  /** Receipts published while recovering (lost, cancelled, expired, rejected). */
  receipts: { job_id: string; gen: number; outcome: string; exit_code: number; reason: string | null }[];
  /** Jobs given back to the queue (end record `released`). */
  requeued: { job_id: string; gen: number }[];
  readyRebuilt: string[];
  readyRemoved: string[];
  tempRemoved: string[];
  workersRemoved: string[];
  holdsRemoved: string[];
  /** Left alone because nothing could prove the owner dead or the execution stopped (error code UNPROVEN). */
  unproven: { code: 'UNPROVEN'; job_id: string; gen: number; clause: string; reason: string }[];
  /** Left alone by design (damaged or untrusted records, GEN_MAX, foreign names): recovering again changes nothing. */
  skipped: { path: string; job_id: string | null; reason: string }[];
  /** Not recovered because an operation failed (code IO: ENOSPC, EROFS, EACCES, ...): recover again once the cause is fixed. */
  failed: { path: string; job_id: string | null; code: string; errno: string | null; reason: string }[];
}

/** Options of `recover`: the consumer's, and a progress callback. */
export interface RecoverOptions extends ConsumerOptions {
  /**
   * Called before each entry of jobs/ is looked at: `done` of `total`, for a
   * progress display. If it throws, or returns a promise that rejects, the
   * call rejects with that error (the first one) before the next entry is
   * looked at: what was recovered before stays recovered. A promise it
   * returns is waited for before the call resolves.
   */
  onProgress?: (done: number, total: number) => void;
}

/**
 * One recovery pass over a queue (spec/recovery-and-gc.md): break the claims of owners
 * proven dead whose executions are proven stopped, finishing or requeuing
 * their jobs (RECOV-1), rebuild the ready index (READY-4), remove stale temp
 * files (TEMP-1), registrations of dead workers (WORKER-1) and released
 * holds (GC-2). What cannot be proven is reported and left alone.
 */
export async function recover(queue: string | Queue, options: RecoverOptions = {}): Promise<RecoverReport> {
  const ctx = await makeContext(options, null);
  const q = await openWith(queue, ctx);
  const report: RecoverReport = {
    queue: q.root,
    claimsBroken: [],
    receipts: [],
    requeued: [],
    readyRebuilt: [],
    readyRemoved: [],
    tempRemoved: [],
    workersRemoved: [],
    holdsRemoved: [],
    unproven: [],
    skipped: [],
    failed: [],
  };
  const skip = (p: string, jobId: string | null, error: unknown): void => {
    const reason = error instanceof Error ? error.message : String(error);
    // A refusal (a symlink, a foreign owner, a bad record) is the entry's own state: left alone by design.
    // An IO error, or anything unexpected, is a recovery that did not happen.
    if (isFsjobError(error) && error.code !== 'IO') report.skipped.push({ path: p, job_id: jobId, reason });
    else report.failed.push({ path: p, job_id: jobId, code: isFsjobError(error) ? error.code : 'IO', errno: (isFsjobError(error) ? error.errno : errnoOf(error)) ?? null, reason });
  };
  await removeStaleTemps(ctx, q, q.root, report);
  await removeStaleTmp(ctx, q, report);
  const entries = await listDir(q.paths.dir('jobs'), q.fsOptions);
  let done = 0;
  const callbacks = new CallerCallbacks();
  for (const entry of entries) {
    callbacks.check();
    callbacks.call(options.onProgress, done++, entries.length);
    const jobPath = path.join(q.paths.dir('jobs'), entry.name);
    if (entry.name.startsWith('.')) {
      await removeIfStale(ctx, q, jobPath, report);
      continue;
    }
    if (entry.kind === 'dir' && entry.name.endsWith(GATED_SUFFIX) && jobIdOfDirName(entry.name) !== undefined) {
      // A gated job was never claimed (GATE-2): nothing to recover; its temporary names are TEMP-1's.
      await removeStaleTemps(ctx, q, jobPath, report).catch((error: unknown) => skip(jobPath, jobIdOfDirName(entry.name) ?? null, error));
      continue;
    }
    if (entry.kind !== 'dir' || !isJobId(entry.name)) {
      report.skipped.push({ path: jobPath, job_id: null, reason: 'not a job directory (LAYOUT-4): foreign, left alone' });
      continue;
    }
    try {
      await recoverJob(ctx, q, entry.name, report);
    } catch (error) {
      skip(jobPath, entry.name, error);
    }
  }
  // Each sweep on its own: a registration that cannot be removed (EROFS) does not stop the ready index's rebuild.
  const sweeps: [string, () => Promise<unknown>][] = [
    [q.paths.dir('ready'), async () => report.readyRebuilt.push(...(await rebuildReady(ctx, q)))],
    [q.paths.dir('ready'), () => sweepReady(ctx, q, report)],
    [q.paths.dir('workers'), () => sweepWorkers(ctx, q, report)],
    [q.paths.dir('dedupe'), () => sweepHolds(ctx, q, 'dedupe', report)],
    [q.paths.dir('lanes'), () => sweepHolds(ctx, q, 'lanes', report)],
  ];
  for (const [where, sweep] of sweeps) await sweep().catch((error: unknown) => skip(isFsjobError(error) && error.path !== undefined ? error.path : where, null, error));
  await callbacks.settle();
  return report;
}

async function recoverJob(ctx: Context, q: Queue, id: string, report: RecoverReport): Promise<void> {
  const files: JobFiles = await listJob(q, id);
  for (const temp of files.temps) await removeIfStale(ctx, q, path.join(files.dir, temp.name), report);
  // READY-3 for finished jobs is one pass over ready/ (sweepReady), not a listing per job.
  if (files.receipt) return;
  const spec = await ctx.specs.get(q, id);
  if (spec === undefined) return;
  // A one-shot recover judges foreign claims by its own watch (LEASE-3): a claim that
  // looks expired by the wall clock is reported, not broken, until a watch has seen it unchanged.
  const view = await deriveStatus(q, files, { clock: ctx.clock, leases: ctx.leases, ...(spec.ok ? { spec: spec.spec } : {}) });
  if (view.status === 'damaged') {
    report.skipped.push({ path: files.dir, job_id: id, reason: `damaged: ${view.findings[0]?.message ?? 'its records cannot be read'}` });
    return;
  }
  if ((view.status === 'claimed' || view.status === 'running') && view.owner?.verdict === 'unknown') {
    report.unproven.push({ code: 'UNPROVEN', job_id: id, gen: view.gen, clause: view.owner.basis === 'lease' ? 'LEASE-3' : 'ID-6', reason: `the owner of claim ${view.gen} cannot be judged: ${view.owner.reason}` });
    return;
  }
  if (view.status !== 'orphaned') return;
  const ownerReason = view.owner?.reason ?? 'owner dead';
  const result = await claimJob(ctx, q, id, spec, files, view, { purpose: 'release', hasHandler: () => true });
  switch (result.kind) {
    case 'unproven':
      report.unproven.push({ code: 'UNPROVEN', job_id: id, gen: result.gen, clause: result.clause, reason: result.reason });
      return;
    case 'limit':
      report.skipped.push({ path: files.dir, job_id: id, reason: `claim generation ${result.gen} is GEN_MAX: no further claim is possible (CLAIM-4)` });
      return;
    case 'raced':
    case 'skip':
      return;
    case 'decided':
      report.claimsBroken.push({ job_id: id, gen: view.gen, reason: ownerReason });
      if (result.receipt !== undefined) {
        const r = result.receipt;
        report.receipts.push({ job_id: id, gen: r.gen, outcome: r.outcome, exit_code: r.exit_code, reason: r.reason });
      }
      if (result.end !== undefined) report.requeued.push({ job_id: id, gen: result.end.gen });
      return;
    case 'run':
      // A release claim never runs; close what the decision opened.
      await result.ticket.stdin?.close().catch(() => undefined);
      return;
  }
}

/** TEMP-1: a name starting with "." older than TEMP_MAX_AGE, removed without following links. */
async function removeIfStale(ctx: Context, q: Queue, target: string, report: RecoverReport): Promise<void> {
  const info = await statEntry(target, q.fsOptions);
  if (info === undefined || ctx.clock.nowMs() - info.mtimeMs <= TEMP_MAX_AGE) return;
  if (await removeTree(target, q.fsOptions)) report.tempRemoved.push(target);
}

async function removeStaleTemps(ctx: Context, q: Queue, dir: string, report: RecoverReport, entries?: DirEntry[]): Promise<void> {
  for (const entry of entries ?? (await listDir(dir, q.fsOptions))) {
    if (entry.name.startsWith('.')) await removeIfStale(ctx, q, path.join(dir, entry.name), report);
  }
}

/**
 * TEMP-1 for tmp/: staging directories of crashed producers, .gc-* trees of
 * crashed collectors; TEMP-2: never one named after a job that jobs/ holds.
 */
async function removeStaleTmp(ctx: Context, q: Queue, report: RecoverReport): Promise<void> {
  for (const entry of await listDir(q.paths.dir('tmp'), q.fsOptions)) {
    const named = tmpEntryJobId(entry.name);
    if (named !== undefined && (await locateJob(q, named)) !== 'missing') {
      report.skipped.push({ path: path.join(q.paths.dir('tmp'), entry.name), job_id: named, reason: `named after the published job ${named}: it may be that job's own directory after a power loss (TEMP-2)` });
      continue;
    }
    await removeIfStale(ctx, q, path.join(q.paths.dir('tmp'), entry.name), report);
  }
}

/** READY-3 and TEMP-1 in ready/. */
async function sweepReady(ctx: Context, q: Queue, report: RecoverReport): Promise<void> {
  const dir = q.paths.dir('ready');
  await removeStaleTemps(ctx, q, dir, report);
  for (const name of await staleReadyEntries(q, ctx.clock.nowMs())) {
    if (await removeTree(path.join(dir, name), q.fsOptions)) report.readyRemoved.push(name);
  }
}

/** WORKER-1: a registration whose owner is dead (ID-6, ID-7) is stale. */
async function sweepWorkers(ctx: Context, q: Queue, report: RecoverReport): Promise<void> {
  const dir = q.paths.dir('workers');
  const entries = await listDir(dir, q.fsOptions);
  await removeStaleTemps(ctx, q, dir, report, entries);
  for (const entry of entries) {
    const workerId = entry.name.endsWith('.json') ? entry.name.slice(0, -'.json'.length) : '';
    if (!WORKER_ID_PATTERN.test(workerId)) continue;
    const read = await readRecord(path.join(dir, entry.name), 'worker', { ...q.fsOptions, expectedWorkerId: workerId, allowMissing: true });
    if (read === undefined || !read.ok) continue;
    const w = read.value;
    const verdict = await judgeOwner(w.owner, { nowMs: ctx.clock.nowMs(), lastRenewalMs: w.heartbeat_ms, leaseMs: w.lease_ms });
    if (verdict.verdict === 'dead' && (await removeTree(path.join(dir, entry.name), q.fsOptions))) report.workersRemoved.push(workerId);
  }
}

/** GC-2 and LANE-3: every hold below the highest of its key may go; the highest never does. */
async function sweepHolds(ctx: Context, q: Queue, kind: 'dedupe' | 'lanes', report: RecoverReport): Promise<void> {
  const root = q.paths.dir(kind);
  const keys = await listDir(root, q.fsOptions);
  await removeStaleTemps(ctx, q, root, report, keys);
  for (const keyDir of keys) {
    if (keyDir.kind !== 'dir' || !/^[0-9a-f]{64}$/.test(keyDir.name)) continue;
    const dir = path.join(root, keyDir.name);
    let entries: DirEntry[];
    try {
      entries = await listDir(dir, q.fsOptions);
    } catch (error) {
      if (error instanceof FsjobError) continue;
      throw error;
    }
    await removeStaleTemps(ctx, q, dir, report, entries);
    const numbered = entries
      .filter((entry) => entry.kind === 'file' && entry.name.endsWith('.json'))
      .map((entry) => ({ entry, n: parseHoldNumber(entry.name.slice(0, -'.json'.length)) }))
      .filter((item): item is { entry: DirEntry; n: number } => item.n !== undefined);
    const top = Math.max(0, ...numbered.map((item) => item.n));
    for (const item of numbered) {
      if (item.n < top && (await removeTree(path.join(dir, item.entry.name), q.fsOptions))) report.holdsRemoved.push(path.join(kind, keyDir.name, item.entry.name));
    }
  }
}
