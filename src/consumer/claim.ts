/**
 * The claim protocol of spec/claim.md for one job, and the owner's decision
 * list (CLAIM-6). The caller chose the job (select.ts) and hands in the
 * listing and status it just derived.
 *
 * Commit point: the link() of `claim.<g+1>.json` (CLAIM-5). Before it, a
 * claim is never taken over an owner that is alive or unknown (CLAIM-3), nor
 * over an execution that is not proven stopped (RECOV-1 step 1); after it,
 * every write goes through the Ownership, which re-checks CLAIM-7 first.
 */
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { FsjobError } from '../base/errors.ts';
import { clipUtf8 } from '../base/text.ts';
import { GEN_MAX, RECOVER_GRACE, STDIN_MAX } from '../base/constants.ts';
import { openBounded, type SafeHandle } from '../fs/safefs.ts';
import { cancelReason } from '../model/cancel-request.ts';
import { publishClaim, type CommitTurn, type ReceiptFields } from '../model/generation.ts';
import { laneHeld, laneSlotsOf, takeHold } from '../model/holds.ts';
import { stopGroup } from '../model/groups.ts';
import { attemptsUsed, executionState, listJob, listJobIn, readGenRecord, type JobFiles, type JobStatusView } from '../model/job.ts';
import type { Queue } from '../model/queue.ts';
import { removeReadyEntry } from '../model/ready.ts';
import type { EndRecord, ReceiptRecord, SpecRecord } from '../records/codec.ts';
import type { Context, SpecView } from './context.ts';
import { deadOutputSummary, GIVE_BACK_DELAY, Ownership } from './owner.ts';
import { outputKeepOf } from '../model/output-keep.ts';

/** What the claimer may do with a job once it owns it. */
export interface ClaimPolicy {
  /** 'run': a consumer; 'release': a one-shot recover, which ends the generation instead (RECOV-1 step 3). */
  purpose: 'run' | 'release';
  /** Whether a payload handler of this name runs here (PAYLOAD-1). */
  hasHandler(name: string): boolean;
}

/** A job this process owns and will now run (CLAIM-6 step 9). */
export interface RunTicket {
  owner: Ownership;
  spec: SpecRecord;
  /** Attempts used before this one (RETRY-1). */
  attemptsUsed: number;
  /** The job's stdin, opened and checked (EXEC-7), or null for /dev/null. */
  stdin: SafeHandle | null;
  /** Whether the claim broke an orphaned one (RECOV-2). */
  recovered: boolean;
  /** Under a policy, the program that runs: argv[0] resolved against the trusted PATH (EXEC-15). */
  program?: string;
}

export type ClaimResult =
  | { kind: 'skip'; reason: string }
  | { kind: 'unproven'; gen: number; clause: string; reason: string }
  | { kind: 'limit'; gen: number }
  | { kind: 'raced' }
  | { kind: 'decided'; owner: Ownership; receipt?: ReceiptRecord; end?: EndRecord }
  | { kind: 'run'; ticket: RunTicket };

/**
 * RECOV-1 step 1: is generation g's execution proven stopped? A same-host
 * group whose identity matches is stopped first (TERM, RECOVER_GRACE, KILL).
 */
export async function proveStopped(ctx: Context, queue: Queue, files: JobFiles, gen: number): Promise<{ stopped: true } | { stopped: false; reason: string }> {
  const state = await executionState(queue, files, gen, { clock: ctx.clock, leases: ctx.leases });
  if (state === 'none' || state === 'stopped') return { stopped: true };
  if (state === 'running') {
    const exec = await readGenRecord(queue, files, 'exec', gen);
    if (exec.ok && exec.value.group !== null) {
      const result = await stopGroup(exec.value.group, { graceMs: RECOVER_GRACE, clock: ctx.clock });
      if (result === 'stopped') return { stopped: true };
      return { stopped: false, reason: `process group ${exec.value.group.pgid} of generation ${gen} survived SIGTERM and SIGKILL or could not be judged` };
    }
  }
  return { stopped: false, reason: `the execution of generation ${gen} cannot be proven stopped (foreign with a live lease, unreadable, or permission denied)` };
}

/**
 * The claim protocol (spec/claim.md) steps 2 to 6 for a job the caller listed (`files`) and judged
 * (`view`) just now. Never throws for the job's own faults; throws for I/O.
 * `commitTurn`: where the claim waits to be linked after the caller's earlier claims in flight (claims-in-flight.ts).
 */
export async function claimJob(
  ctx: Context,
  queue: Queue,
  id: string,
  spec: SpecView,
  files: JobFiles,
  view: JobStatusView,
  policy: ClaimPolicy,
  commitTurn?: CommitTurn,
): Promise<ClaimResult> {
  if (files.receipt) {
    await removeReadyEntry(queue, id, spec.ok ? spec.spec.priority : undefined).catch(() => undefined); // READY-3
    return { kind: 'skip', reason: 'finished' };
  }
  const g = files.gen;
  let recovered = false;
  if (g > 0 && !files.ends.has(g)) {
    // CLAIM-3: an open claim is broken only over a dead owner whose execution is proven stopped.
    if (view.status === 'damaged' || view.owner === undefined) return { kind: 'skip', reason: 'damaged' };
    if (view.owner.verdict !== 'dead') return { kind: 'skip', reason: `claim ${g} is held (${view.owner.reason})` };
    const proof = await proveStopped(ctx, queue, files, g);
    if (!proof.stopped) return { kind: 'unproven', gen: g, clause: 'RECOV-1', reason: proof.reason };
    recovered = true;
  }
  if (g + 1 > GEN_MAX) {
    // CLAIM-4: no claim past GEN_MAX. A dead owner's open claim GEN_MAX never ran the
    // job (CLAIM-9): a recoverer finishes it with its claim_limit receipt, unclaimed (RECOV-4).
    if (recovered) return finishAtGenMax(ctx, queue, id, spec, g);
    return { kind: 'limit', gen: g };
  }
  const gen = g + 1;
  const claimedMs = ctx.clock.nowMs();
  // CLAIM-5: the commit point of the claim.
  if (!(await publishClaim(queue, id, gen, { owner: ctx.self, workerId: ctx.workerId, leaseMs: ctx.leaseMs }, claimedMs, files.handle, commitTurn))) return { kind: 'raced' };
  ctx.emit({ type: 'claimed', queue: queue.root, job_id: id, gen, recovered });
  const owner = new Ownership(ctx, queue, id, gen, claimedMs, files.handle);
  try {
    return await decide(owner, spec, policy, recovered, files);
  } catch (error) {
    // Nothing ran (I/O failed while deciding, e.g. while taking the lane): hand
    // the generation back as EXEC-3 does for a failed start. Left open, the
    // claim of this live owner would make every consumer, this one included,
    // skip the job until the process dies (CLAIM-3, CLAIM-8).
    await giveBackUndecided(owner).catch(() => undefined);
    throw error;
  }
}

/** RECOV-4: the lost receipt of a job whose claim GEN_MAX died open, published without a claim. */
async function finishAtGenMax(ctx: Context, queue: Queue, id: string, spec: SpecView, gen: number): Promise<ClaimResult> {
  const owner = new Ownership(ctx, queue, id, gen, ctx.clock.nowMs());
  const used = await attemptsUsed(queue, await listJob(queue, id));
  return finish(
    owner,
    { outcome: 'lost', exit_code: 125, reason: 'claim_limit', message: `the owner of generation ${gen} (GEN_MAX) died before finishing the job (RECOV-4)`, attempts: used },
    spec.ok ? spec.spec : undefined,
  );
}

async function giveBackUndecided(owner: Ownership): Promise<void> {
  if ((await listJob(owner.queue, owner.id)).receipt) return; // decided after all (RCPT-3)
  await owner.publishEnd('released', false, GIVE_BACK_DELAY, null);
}

async function finish(owner: Ownership, fields: ReceiptFields, spec?: SpecRecord): Promise<ClaimResult> {
  const receipt = await owner.publishReceipt(fields, spec);
  return receipt === undefined ? { kind: 'decided', owner } : { kind: 'decided', owner, receipt };
}

/**
 * What CLAIM-6 reads after the claim: the job directory as it is now. The
 * listing made before a first claim (`before`, no claim in it) still
 * holds, except for cancel records: nobody else could claim generation 1
 * meanwhile, so no exec, end or receipt can have appeared (6.0 needs a
 * superseded owner; RECOV-4's receipt without a claim is GEN_MAX's), but a
 * cancel record may (CANCEL-2 publishes it before it tries to claim). Two
 * lstats replace a second listing there; any other claim lists again.
 */
function afterClaim(owner: Ownership, before: JobFiles | undefined): JobFiles | Promise<JobFiles> {
  if (before === undefined || before.gen !== 0 || owner.gen !== 1 || before.handle !== owner.handle) return listJobIn(owner.id, owner.handle);
  // Synchronous lstats (read.ts, presentNow): the listing stands in the common case, with no promise to wait for.
  const cancel = owner.handle.presentNow('cancel.json');
  const cancelForce = owner.handle.presentNow('cancel-force.json');
  if (cancel === before.cancel && cancelForce === before.cancelForce) return before;
  return listJobIn(owner.id, owner.handle);
}

/** CLAIM-6, in its order, as the owner of `owner.gen`; `before` is the listing the claim was decided on, when the caller has it. */
export async function decide(owner: Ownership, view: SpecView, policy: ClaimPolicy, recovered: boolean, before?: JobFiles): Promise<ClaimResult> {
  const { ctx, queue } = owner;
  const after = afterClaim(owner, before);
  // Awaited only when a listing was made: an await of an answer at hand is a promise and a turn of each claim.
  const files = after instanceof Promise ? await after : after;
  // 6.0: a superseded owner finished the job after we listed it.
  if (files.receipt) return { kind: 'decided', owner };
  // RETRY-1: no exec record, no attempt used (and nothing to read).
  const used = files.execs.size === 0 ? 0 : await attemptsUsed(queue, files);
  // 6.1
  if (!view.ok) {
    return finish(owner, { outcome: 'rejected', exit_code: 126, reason: view.reason, message: view.message, attempts: used });
  }
  const spec = view.spec;
  // 6.2 (CANCEL-2 before any execution of this generation)
  if (files.cancel || files.cancelForce) {
    // The request's reason says why (AFTER-3: the dependency that failed).
    const why = await cancelReason(files.handle, owner.id, files);
    return finish(owner, { outcome: 'cancelled', exit_code: 130, message: clipUtf8(`cancelled before it ran${why === null ? '' : `: ${why}`}`), attempts: used }, spec);
  }
  // 6.3
  const now = ctx.clock.nowMs();
  if (spec.queue_deadline_ms !== null && files.execs.size === 0 && now > spec.created_ms + spec.queue_deadline_ms) {
    return finish(owner, { outcome: 'expired', exit_code: 124, message: `not started within queue_deadline_ms ${spec.queue_deadline_ms} of its creation`, attempts: used }, spec);
  }
  // 6.4: the last attempt died with its owner (RECOV-1 step 3).
  if (used >= spec.max_attempts) {
    const last = Math.max(0, ...[...files.execs].filter((h) => h < owner.gen));
    let started: number | null = null;
    if (last > 0) {
      const exec = await readGenRecord(queue, files, 'exec', last);
      if (exec.ok) started = exec.value.recorded_ms;
    }
    const bound = spec.max_output_bytes;
    return finish(
      owner,
      {
        outcome: 'lost',
        exit_code: 125,
        reason: 'owner_lost',
        message: `attempt ${used} of ${spec.max_attempts} died with its owner; no attempt remains`,
        attempts: used,
        started_ms: started,
        stdout: last > 0 ? await deadOutputSummary(queue, owner.id, 'stdout', last, bound, outputKeepOf(spec)) : null,
        stderr: last > 0 ? await deadOutputSummary(queue, owner.id, 'stderr', last, bound, outputKeepOf(spec)) : null,
      },
      spec,
    );
  }
  // 6.5: generation GEN_MAX never runs the job (CLAIM-9).
  if (owner.gen >= GEN_MAX) {
    return finish(owner, { outcome: 'lost', exit_code: 125, reason: 'claim_limit', message: `generation ${owner.gen} is GEN_MAX: no generation may run the job (CLAIM-9)`, attempts: used }, spec);
  }
  // CLAIM-10: steps 0 to 5 are every claimer's; a one-shot recover then gives the job back.
  if (policy.purpose === 'release') {
    const end = await owner.publishEnd('released', false, 0, null);
    return { kind: 'decided', owner, end };
  }
  // 6.6 (policy, handler), 6.7 (cwd, stdin)
  let program: string | undefined;
  if (spec.argv !== undefined) {
    if (ctx.allow !== null) {
      const verdict = ctx.allow.judge(spec.argv[0], spec.cwd, spec.env);
      if (!verdict.ok) return finish(owner, { outcome: 'rejected', exit_code: 126, reason: 'not_allowed', message: `refused by this consumer's policy: ${verdict.why}`, attempts: used }, spec);
      program = verdict.program;
    }
    const cwdProblem = await cwdUnusable(spec.cwd, queue.root);
    if (cwdProblem !== null) {
      return finish(owner, { outcome: 'rejected', exit_code: 126, reason: 'cwd_unusable', message: `cwd ${spec.cwd} ${cwdProblem} (EXEC-5)`, attempts: used }, spec);
    }
  } else if (spec.handler !== undefined && !policy.hasHandler(spec.handler)) {
    return finish(owner, { outcome: 'rejected', exit_code: 126, reason: 'no_handler', message: `no handler ${JSON.stringify(spec.handler)} where it was claimed (PAYLOAD-1)`, attempts: used }, spec);
  }
  let stdin: SafeHandle | null = null;
  if (spec.stdin !== null && spec.argv !== undefined) {
    const opened = await openStdin(queue, owner.id, spec.stdin.bytes);
    if (typeof opened === 'string') {
      return finish(owner, { outcome: 'rejected', exit_code: 126, reason: 'stdin_unusable', message: `stdin ${opened} (EXEC-7)`, attempts: used }, spec);
    }
    stdin = opened;
  }
  // 6.8: LANE-2, after claiming, in the first slot of 1 to lane_slots that can be taken (LANE-5).
  if (spec.lane !== null) {
    let taken = false;
    try {
      for (let slot = 1; !taken && slot <= laneSlotsOf(spec); slot++) {
        await owner.guard(); // CLAIM-7: before each hold this generation publishes
        const result = await takeHold(queue, 'lane', spec.lane, (hold) => laneHeld(queue, hold, { clock: ctx.clock, leases: ctx.leases }), { jobId: owner.id, gen: owner.gen, clock: ctx.clock, slot });
        taken = result.taken;
      }
    } catch (error) {
      await stdin?.close().catch(() => undefined);
      throw error;
    }
    if (!taken) {
      await stdin?.close().catch(() => undefined);
      const end = await owner.publishEnd('lane_busy', false, 0, null);
      return { kind: 'decided', owner, end };
    }
  }
  return { kind: 'run', ticket: { owner, spec, attemptsUsed: used, stdin, recovered, ...(program === undefined ? {} : { program }) } };
}

/**
 * EXEC-5: null when usable, else what is wrong. The directory lies outside the
 * queue (SEC-8) both as written (lexically normalised, no link resolved: a
 * link inside the queue must not lead out of it either) and once resolved.
 */
/** Each queue root resolved once per process (its links do not move under a worker), not once per command job. */
const resolvedRoots = new Map<string, string>();

export async function cwdUnusable(cwd: string, queueRoot: string): Promise<string | null> {
  if (!path.isAbsolute(cwd)) return 'is not an absolute path';
  const inside = (dir: string, root: string): boolean => dir === root || dir.startsWith(root.endsWith('/') ? root : `${root}/`);
  // path.resolve normalises "." and ".." without touching the filesystem.
  if (inside(path.resolve(cwd), path.resolve(queueRoot))) return 'lies inside the queue as written';
  // Synchronous: three metadata calls on local names, each cheaper than a hand-off to libuv's pool and back
  // (spec/design-hot-path.md), once per command job.
  try {
    const info = statSync(cwd);
    if (!info.isDirectory()) return 'is not a directory';
  } catch {
    return 'does not exist or cannot be examined';
  }
  try {
    let root = resolvedRoots.get(queueRoot);
    if (root === undefined) resolvedRoots.set(queueRoot, (root = realpathSync.native(queueRoot)));
    if (inside(realpathSync.native(cwd), root)) return 'lies inside the queue once its links are resolved';
  } catch {
    return 'cannot be resolved';
  }
  return null;
}

/** EXEC-7: the stdin file exists, is regular, within STDIN_MAX and of the size the spec says. */
async function openStdin(queue: Queue, id: string, bytes: number): Promise<SafeHandle | string> {
  try {
    const { handle, size } = await openBounded(queue.paths.jobFile(id, 'stdin'), STDIN_MAX, queue.fsOptions);
    if (size !== bytes) {
      await handle.close().catch(() => undefined);
      return `holds ${size} bytes, the spec says ${bytes}`;
    }
    // SEC-10: a stdin with more than one link shares its content with another name, maybe outside the queue.
    const links = (await handle.stat()).nlink;
    if (links !== 1) {
      await handle.close().catch(() => undefined);
      return `has ${links} hard links: its content may be another file's (SEC-9, SEC-10)`;
    }
    return handle;
  } catch (error) {
    if (error instanceof FsjobError && error.code !== 'IO') return `is unusable: ${error.message.split('; ')[0] ?? error.code}`;
    throw error;
  }
}
