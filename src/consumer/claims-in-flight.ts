/**
 * A Worker's claims in flight (issue 24 target 2).
 *
 * Most of a claim is waiting for the disk: the fsync of its temp file
 * before the link, the job directory's after it (CLAIM-5), and CLAIM-6's
 * decision, which may write more. A Worker that claimed for its free slots
 * one after another was capped at one claim per two fsyncs, whatever its
 * concurrency: 308 jobs/s at concurrency 2 and 262 at 64, where the
 * floor's 16 threads, whose claims overlap, made 747 (bench run3).
 *
 * So the walk (select.ts) stays one at a time: it chooses the next job in
 * CLAIM-1's order, starts its claim and hands it over here, and the worker
 * walks on for its next free slot while the claim's writes, fsyncs and
 * decision run. What one claim at a time gave stays true:
 * - no two claims of this worker for one job: a job with a claim in flight
 *   is skipped by the walk as a running one is (CLAIM-8). The walk never
 *   looks into its directory, so a pool's wait for another consumer's
 *   claim in flight (select.ts, claimInFlight) never waits for its own;
 * - CLAIM-1's order of commits: in each queue a claim is linked only after
 *   the claims started before it were linked or gave up (commitTurn). The
 *   temp files' writes and fsyncs and the directory fsyncs overlap; only
 *   the links, a few microseconds each, queue;
 * - lanes: a walk that reaches a job with a lane first waits until none of
 *   this worker's claims in flight is for a job of that lane, so it judges
 *   the lane (LANE-4) on the holds they took, and no claim of this worker
 *   ends `lane_busy` against another of its own (two claimers racing for a
 *   slot would each use a generation; LANE-2's link keeps the slot's holder
 *   single either way);
 * - a claim's result is what it was: a job launched, a job decided, a lost
 *   race (the walk goes on at the next turn), one job's trouble reported.
 *
 * Each claim in flight is an operation of its own (flush.ts), so with
 * several of them their fsyncs go to the pool and overlap. A claim is
 * handed over only when the view lists another job to claim beside it: a
 * worker that keeps up with its producer (one new job at a time) claims as
 * before, its fsyncs inline, since a pool hand-off there only cost CPU
 * (0.3 ms per job more in the throughput group's one-at-a-time rows). A
 * Worker of concurrency 1 hands nothing over.
 */
import { beginOperation } from '../fs/safefs.ts';
import type { CommitTurn } from '../model/generation.ts';
import type { ClaimOutcome, ClaimPipeline } from './select.ts';

interface InFlightClaim {
  root: string;
  lane: string | null;
  /** Resolves once the claim's outcome was handled (a job launched, a race counted). */
  settled: Promise<void>;
}

const RESOLVED: Promise<void> = Promise.resolve();

/** The claims a Worker has in flight, by `claimKey`. */
export class ClaimsInFlight {
  private readonly claims = new Map<string, InFlightClaim>();
  /** Per queue root: resolves when the latest claim started there was linked or gave up. */
  private readonly links = new Map<string, Promise<void>>();

  get size(): number {
    return this.claims.size;
  }

  /** Whether job `id` of queue `root` is being claimed by this worker. */
  has(key: string): boolean {
    return this.claims.has(key);
  }

  /**
   * The pipeline of one queue for select.ts; `settled` handles each claim's
   * outcome (it must not throw); `busy` counts the worker's slots taken. A
   * claim is handed over while the view lists a job besides this one and
   * the worker's own (running or being claimed, in any queue: an upper bound).
   */
  pipeline(root: string, settled: (outcome: ClaimOutcome) => void, busy: () => number): ClaimPipeline {
    return {
      takes: (listed) => listed > busy() + 1,
      laneClear: (lane) => this.laneClear(root, lane),
      start: (id, lane, claim) => this.start(root, id, lane, claim, settled),
      inline: (claim) => this.inline(root, claim),
    };
  }

  /**
   * A claim the walk makes itself (too few jobs listed to hand it over) links
   * after the claims in flight started before it: without a turn it could
   * overtake one still at its fsync (CLAIM-1's order). Nothing starts behind
   * it (the walk waits for it), so it takes no turn of its own, and with no
   * claim in flight in the queue it waits for nothing (its fsyncs inline).
   */
  private inline(root: string, claim: (turn: CommitTurn | undefined) => Promise<ClaimOutcome>): Promise<ClaimOutcome> {
    const before = this.links.get(root);
    if (before === undefined) return claim(undefined);
    return claim(async () => {
      await before;
      return () => undefined;
    });
  }

  /** Resolves once every claim now in flight was handled (a stopping worker waits for them: their jobs are then its to stop). */
  async all(): Promise<void> {
    while (this.claims.size > 0) await Promise.all([...this.claims.values()].map((claim) => claim.settled));
  }

  private async laneClear(root: string, lane: string): Promise<void> {
    for (;;) {
      const waits = [...this.claims.values()].filter((claim) => claim.root === root && claim.lane === lane).map((claim) => claim.settled);
      if (waits.length === 0) return;
      await Promise.all(waits);
    }
  }

  private start(root: string, id: string, lane: string | null, claim: (turn: CommitTurn) => Promise<ClaimOutcome>, settled: (outcome: ClaimOutcome) => void): void {
    const key = claimKey(root, id);
    const before = this.links.get(root) ?? RESOLVED;
    let linked!: () => void;
    const mine = new Promise<void>((resolve) => (linked = resolve));
    this.links.set(root, mine);
    const operation = beginOperation();
    const turn: CommitTurn = async () => {
      await before;
      return linked;
    };
    // settleClaim never throws; should it all the same, the claim ends as one that claimed nothing, so
    // that its turn and its operation are still given back: a turn never given back would hold every
    // later claim of this queue at its link for ever.
    const done = claim(turn).catch((): ClaimOutcome => ({ result: null, raced: false })).then((outcome) => {
      // A claim that gave up before its link ends its turn here.
      linked();
      operation();
      if (this.links.get(root) === mine) this.links.delete(root);
      this.claims.delete(key);
      settled(outcome);
    });
    this.claims.set(key, { root, lane, settled: done });
  }
}

/** The key of job `id` of queue `root` among a worker's jobs. */
export function claimKey(root: string, id: string): string {
  return `${root}\0${id}`;
}
