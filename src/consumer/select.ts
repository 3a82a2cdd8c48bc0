/**
 * Choosing the next job (spec/claim.md) and keeping the ready index whole
 * (spec/claim.md).
 *
 * Order: ascending byte order of ready entry names, which is priority, then
 * enqueue order (LAYOUT-7, CLAIM-1); the first job this consumer can claim
 * is claimed (CLAIM-2), except that a job whose lane is held is passed over
 * (LANE-4) and so is a preemptible job while a non-preemptible job of its
 * lane waits (PREEMPT-2). The index is a hint (READY-1): every entry is
 * verified against the job directory before anything is done to the job.
 */
import { FsjobError, isFsjobError } from '../base/errors.ts';
import type { Dir } from '../fs/safefs.ts';
import { CLAIMABLE, deriveStatus, deriveStatusNow, listJobNow, type JobFiles } from '../model/job.ts';
import { genRecordName } from '../model/layout.ts';
import type { Queue } from '../model/queue.ts';
import { openJobDir } from '../model/queue-dirs.ts';
import { isPaused } from '../model/pause.ts';
import { rebuildReady as rebuildReadyIndex, removeStaleReadyEntry } from '../model/ready.ts';
import type { SpecRecord } from '../records/codec.ts';
import type { CommitTurn } from '../model/generation.ts';
import { claimJob, type ClaimPolicy, type ClaimResult } from './claim.ts';
import type { Context, SpecView } from './context.ts';
import { lookAtGated, passOverGated } from './gates.ts';
import { mayStartNow } from './lanes.ts';
import { ReadyView } from './ready-view.ts';

export interface SelectFilter {
  /** Jobs this consumer owns right now (CLAIM-8) or keeps away from for a while. */
  skip(id: string): boolean;
  /** Whether this consumer can run the job at all: a handler, commands allowed (CLAIM-2). */
  canRun(spec: SpecRecord): boolean;
}

export interface SelectResult {
  /** A job claimed and either decided (a receipt or end published) or ready to run; null when none. */
  result: (ClaimResult & { kind: 'decided' | 'run' }) | null;
  /** The earliest retry_at_ms of a retrying job this consumer could run, or null. */
  retryAtMs: number | null;
  /**
   * The shortest time a watched foreign claim needs before it may be broken
   * (LEASE-3), or null: a draining consumer waits for it (MANIFEST-4).
   */
  watchMs: number | null;
  /** The earliest not_before_ms of a delayed job this consumer could run (DELAY-1), or null. */
  notBeforeMs: number | null;
  /** The queue is paused (PAUSE-1): nothing was looked at, nothing claimed. */
  paused: boolean;
  /** Claims this scan lost to another consumer (CLAIM-5: its link() came first). */
  raced: number;
  /**
   * Another consumer's claim was in flight on a job this scan would have
   * claimed, so the walk ended there (a wait, never a skip: CLAIM-2): look
   * again after this many ms, or null.
   */
  claimingMs: number | null;
  /** The walk started a claim and handed it to the pipeline (ClaimPipeline): the job is being claimed, `result` is null. */
  started: boolean;
}

/** What one claim came to for the walk: a job to hand out, or null to walk on (`raced`: another consumer's link came first, CLAIM-5). */
export interface ClaimOutcome {
  result: SelectResult['result'];
  raced: boolean;
}

/**
 * A consumer with several claims in flight at once (claims-in-flight.ts):
 * the walk starts the claim of the job it chose, hands it over and ends,
 * instead of waiting for its fsyncs and CLAIM-6's decision.
 */
export interface ClaimPipeline {
  /** Waits until none of this consumer's claims in flight is for a job of `lane`, so the walk judges the lane (LANE-4) on the holds they took. */
  laneClear(lane: string): Promise<void>;
  /**
   * Whether to hand the next claim over, `listed` entries being in the view:
   * only when another job may be claimed beside it. Otherwise the walk claims
   * as one at a time, its fsyncs inline when nothing else runs (flush.ts):
   * a hand-off to the pool costs CPU that a lone claim does not win back.
   */
  takes(listed: number): boolean;
  /** Takes over the claim of job `id` (of `lane`): `claim` starts it with the turn of its link. */
  start(id: string, lane: string | null, claim: (turn: CommitTurn) => Promise<ClaimOutcome>): void;
  /** A claim the walk makes itself: its link still comes after those of the claims in flight started before it (CLAIM-1). */
  inline(claim: (turn: CommitTurn | undefined) => Promise<ClaimOutcome>): Promise<ClaimOutcome>;
}

/** How long a job held by another live owner is passed over without a look (its owner finishes or dies meanwhile). */
const HELD_PAUSE_MS = 1_000;
/** How soon a consumer that waits for another's claim in flight first looks again: about one fsync, the rest of that claim (then later: ReadyView.waitForClaim). */
export const CLAIM_RECHECK_MS = 2;

/**
 * Another consumer is claiming the job right now: the temp file of claim
 * gen + 1 (PUB-1's `.<name>.<random>`) is in the listing, written and being
 * fsynced before its link (CLAIM-5). Claiming beside it would write and
 * fsync a claim that most likely loses the link: N consumers that walk from
 * the same head each paid that for the others' jobs (issue 24: 0.15 lost
 * claims per job with 2 processes, 2.3 with 16).
 */
function claimInFlight(files: JobFiles): boolean {
  const prefix = `.${genRecordName('claim', files.gen + 1)}.`;
  return files.temps.some((entry) => entry.name.startsWith(prefix));
}

/**
 * A glance at a job another consumer may hold: its first claim exists and
 * has not ended. Two lstats in the held job directory instead of a full
 * look (its spec read and checked, a listing, its claim read and its
 * owner judged), which N consumers each paid for every job the others ran.
 * Only a pause follows from it: whatever the job's status, the full look
 * after HELD_PAUSE_MS decides (CLAIM-3, an orphaned claim: RECOV-1).
 */
async function claimedByOther(dir: Dir): Promise<boolean> {
  return (await dir.present('claim.1.json')) && !(await dir.present('end.1.json'));
}

/**
 * What a claim came to, reported as the walk reports it: a lost race, an
 * unproven or exhausted job (avoided for a while), one job's I/O trouble
 * (reported, avoided). Never throws. The visit's handle `dir` is closed
 * unless the job runs (its owner keeps it until the generation ends).
 */
async function settleClaim(ctx: Context, queue: Queue, id: string, dir: Dir, claim: Promise<ClaimResult>, avoid: (id: string, ms: number) => void): Promise<ClaimOutcome> {
  let kept = false;
  try {
    const result = await claim;
    switch (result.kind) {
      case 'run':
        kept = true;
        return { result, raced: false };
      case 'decided':
        return { result, raced: false };
      case 'unproven':
        ctx.emit({ type: 'unproven', queue: queue.root, job_id: id, gen: result.gen, clause: result.clause, reason: result.reason });
        avoid(id, 30_000);
        break;
      case 'limit':
        ctx.emit({ type: 'skipped', queue: queue.root, job_id: id, reason: `claim generation ${result.gen} is GEN_MAX: no further claim is possible (CLAIM-4)` });
        avoid(id, 3_600_000);
        break;
      case 'raced':
        return { result: null, raced: true };
      default:
        break;
    }
  } catch (error) {
    // One job's trouble (a planted symlink, EACCES) must not stop the queue.
    ctx.emit({ type: 'error', queue: queue.root, job_id: id, error: wrap(error) });
    avoid(id, 5_000);
  } finally {
    if (!kept) dir.close();
  }
  return { result: null, raced: false };
}

function wrap(error: unknown): FsjobError {
  return error instanceof FsjobError ? error : new FsjobError('IO', error instanceof Error ? error.message : String(error), { cause: error });
}

/**
 * CLAIM-1/2: claim the first job in order that this consumer can make
 * progress on. The order comes from `readyView` (a long-running consumer's view
 * of ready/, listed afresh when due) or from a listing made now.
 */
/** How a long-running consumer of a pool looks at the index (pool.ts); the defaults are a lone consumer's. */
export interface PoolLook {
  /** Pass over another consumer's claim on a glance first (claimedByOther): a serving consumer does; drain and once look in full, so they end only on what they judged. */
  glance?: boolean;
  /** Stop at the first entry that appeared in the latest listing only (ReadyView.newlyListed): a consumer that does not listen leaves new jobs to the listeners for one poll. */
  deferNew?: boolean;
}

export async function claimNextIn(
  ctx: Context,
  queue: Queue,
  filter: SelectFilter,
  policy: ClaimPolicy,
  avoid: (id: string, ms: number) => void,
  readyView?: ReadyView,
  look: PoolLook = {},
  pipeline?: ClaimPipeline,
): Promise<SelectResult> {
  // A worker with claims in flight lets the event loop run once before each scan (spec/design-consumer-pool.md). The
  // walk's reads are synchronous (design-hot-path-costs.md, the sixth pass), so a scan no longer yields by itself, and
  // the loop starts scan after scan while slots are free: what the claims in flight and the view wait for (the pool's
  // fsync callbacks, watch events) then waited too. Measured (one consumer process at concurrency 16 beside an
  // enqueueBatch producer, 1,000 jobs, fresh ext4): 239 to 330 jobs/s without this turn, 858 to 864 with it (645 to 755
  // with the reads on the pool, before). At concurrency 1 there is no pipeline, and nothing changes.
  if (pipeline !== undefined) await new Promise<void>((resolve) => setImmediate(resolve));
  // PAUSE-1: while pause.json exists nothing is claimed; one lstat per scan.
  if (isPaused(queue)) return { result: null, retryAtMs: null, watchMs: null, notBeforeMs: null, paused: true, raced: 0, claimingMs: null, started: false };
  let retryAtMs: number | null = null;
  let watchMs: number | null = null;
  let notBeforeMs: number | null = null;
  let raced = 0;
  let claimingMs: number | null = null;
  const done = (result: SelectResult['result'], started = false): SelectResult => ({ result, retryAtMs, watchMs, notBeforeMs, paused: false, raced, claimingMs, started });
  const ready = readyView ?? new ReadyView(queue);
  if (!ready.fresh()) await ready.current();
  for (const entry of ready.entries()) {
    if (filter.skip(entry.id)) continue;
    // AFTER-4: a gated job the last look found blocked is passed over without a system call.
    if (passOverGated(ready, entry.id)) continue;
    // A delay, not a skip: nothing after this entry is claimed in this scan (CLAIM-2).
    if (look.deferNew === true && ready.newlyListed(entry.name)) break;
    const id = entry.id;
    // One visit of the job directory: opened and checked once, listed once,
    // and kept by the claim's owner when this consumer claims the job.
    let dir: Dir | undefined;
    let kept = false;
    try {
      let spec: SpecView;
      try {
        dir = openJobDir(queue, id);
        // Another consumer's claim, seen for the first time (or after waiting for it
        // in flight): passed over on a glance, looked at in full once the pause is over.
        if (look.glance === true && (ready.waitedForClaim(entry.name) || !ready.glancedOnce(entry.name)) && (await claimedByOther(dir))) {
          avoid(id, HELD_PAUSE_MS);
          continue;
        }
        spec = ctx.specs.getIn(queue, id, dir);
      } catch (error) {
        if (!isFsjobError(error, 'NOT_FOUND')) throw error;
        dir = undefined;
        // No jobs/<id>: a gated job is looked at and opened when it may be (GATE-2, GATE-3).
        const gate = await lookAtGated(ctx, queue, id, ready);
        // READY-3: no job directory under either name (yet: the producer may be between ENQ-2 and ENQ-3).
        if (gate === 'missing' && (await removeStaleReadyEntry(queue, entry.name, ctx.clock.nowMs()))) ready.remove(entry.name);
        if (gate !== 'opened') continue;
        dir = openJobDir(queue, id);
        spec = ctx.specs.getIn(queue, id, dir);
      }
      if (spec.ok && !filter.canRun(spec.spec)) continue;
      if (pipeline !== undefined && spec.ok && spec.spec.lane !== null) await pipeline.laneClear(spec.spec.lane);
      const files = listJobNow(id, dir);
      if (files.receipt) ready.remove(entry.name); // claimJob removes the entry itself (READY-3)
      // A pool's consumer waits for another's claim in flight rather than race it, for a while (ReadyView.waitForClaim).
      const wait = look.glance === true && !files.receipt && claimInFlight(files) ? ready.waitForClaim(entry.name, CLAIM_RECHECK_MS) : null;
      if (wait !== null) {
        claimingMs = wait;
        break;
      }
      // A queued job is judged without a record read (deriveStatusNow); one with a claim, a receipt or a gate reads its records.
      const judge = { clock: ctx.clock, leases: ctx.leases, ...(spec.ok ? { spec: spec.spec } : {}) };
      const view = deriveStatusNow(queue, files, judge) ?? (await deriveStatus(queue, files, judge));
      if (view.status === 'retrying') {
        // RETRY-4: when it is due, on this consumer's clock, also after a jump back.
        const at = ctx.clock.nowMs() + (view.retryDueInMs ?? 0);
        retryAtMs = retryAtMs === null ? at : Math.min(retryAtMs, at);
        continue;
      }
      const watch = view.owner?.watchRemainingMs;
      if (watch !== undefined) watchMs = watchMs === null ? watch : Math.min(watchMs, watch);
      if (view.status === 'delayed') {
        // DELAY-1: not claimable before not_before_ms; the caller decides whether to wait for it.
        const at = view.notBeforeMs ?? 0;
        notBeforeMs = notBeforeMs === null ? at : Math.min(notBeforeMs, at);
        continue;
      }
      if (view.status === 'running' || view.status === 'claimed') {
        // Held by a live owner (CLAIM-3): looked at again after a pause, not at every claim of ours;
        // a foreign claim under watch (LEASE-3) is looked at on every scan until the watch decides.
        if (watch === undefined) avoid(id, HELD_PAUSE_MS);
        continue;
      }
      if (!CLAIMABLE.has(view.status) && view.status !== 'finished') continue;
      // LANE-4, PREEMPT-2: only a job of a lane can be held back (mayStartNow answers true at once for the others: no await for them).
      if (spec.ok && view.status === 'queued' && spec.spec.lane !== null && !(await mayStartNow(ctx, queue, id, spec.spec))) continue;
      // The claim takes the visit's handle over (settleClaim closes it, or the owner keeps it until its generation ends).
      kept = true;
      const held = dir;
      if (pipeline?.takes(ready.size) === true) {
        pipeline.start(id, spec.ok ? spec.spec.lane : null, (turn) => settleClaim(ctx, queue, id, held, claimJob(ctx, queue, id, spec, files, view, policy, turn), avoid));
        return done(null, true);
      }
      const claim = (turn?: CommitTurn): Promise<ClaimOutcome> => settleClaim(ctx, queue, id, held, claimJob(ctx, queue, id, spec, files, view, policy, turn), avoid);
      const outcome = await (pipeline === undefined ? claim() : pipeline.inline(claim));
      if (outcome.raced) raced += 1;
      if (outcome.result !== null) return done(outcome.result);
    } catch (error) {
      // One job's trouble (a planted symlink, EACCES) must not stop the queue.
      ctx.emit({ type: 'error', queue: queue.root, job_id: id, error: wrap(error) });
      avoid(id, 5_000);
    } finally {
      if (!kept) dir?.close();
    }
  }
  return done(null);
}

/** READY-4 for this consumer: entries named from the specs it caches. */
export function rebuildReady(ctx: Context, queue: Queue): Promise<string[]> {
  return rebuildReadyIndex(queue, async (id, gated) => {
    const spec = await ctx.specs.get(queue, id, gated);
    return spec?.ok === true ? spec.spec.priority : undefined;
  });
}
