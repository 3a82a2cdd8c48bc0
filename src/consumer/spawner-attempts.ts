/**
 * What a worker knows of each attempt its spawner started (spawner.ts), and
 * the check of the process that holds each one's exit status: bash's
 * spawner itself, which reaps the gates of the bash chain, or the sh chain's
 * waiter. One that died took the status with it (spec/design-spawner.md,
 * item 7): the attempt ends `lost`, and its caller stops the group as a dead
 * owner's.
 */
import type { ChildProcess } from 'node:child_process';
import type { Deferred } from '../base/deferred.ts';
import { isDeadState, processStart } from '../model/identity.ts';
import type { LeaderEnd } from './launch.ts';
import type { FifoMaker } from './spawner-fifos.ts';
import type { Chain, Fifos } from './spawner-request.ts';

/** One spawner process and what it answered. */
export interface Generation extends FifoMaker {
  child: ChildProcess;
  /** Whether requests go framed (bash) or as script lines (sh). */
  framed: boolean;
  /** null once it said `ready`; the reason when it said `fail`. */
  ready: Deferred<string | null>;
  /** The chains its `ready` offered. */
  chains: ReadonlySet<Chain>;
  exited: boolean;
  /** The end of its stderr, for the message when it fails. */
  stderr: string;
  /** A prompt (bash's spawner) is to be written at the end of this tick. */
  prompting: boolean;
}

export interface Attempt {
  id: number;
  generation: Generation;
  /** bash's: the spawner reaps the leader, so the status dies with the spawner; sh's: a waiter does. */
  chain: Chain;
  fifos: Fifos;
  outFd: number | null;
  errFd: number | null;
  relFd: number | null;
  phase: 'starting' | 'running' | 'done';
  started: Deferred<number>;
  end: Deferred<LeaderEnd>;
  leaderPid?: number;
  /** The leader's start as its `p` line gave it (the bash chain's gate reads its own stat). */
  leaderStart?: string;
  /** The sh chain's waiter's pid, and its start once a check saw it alive (a later process with its pid is not it). */
  waiter?: { pid: number; start: string | null };
  /** The waiter, or for the bash chain the spawner, was seen gone at the last check (its last lines get one more round to arrive). */
  waiterGone: boolean;
  /** When the request went out (monotonic ms): a gate that never reports fails after the start limit. */
  sentMs: number;
}

/** How an attempt that lost its status holder ends (the Spawner's own steps). */
export interface AttemptEnds {
  failStart(attempt: Attempt, reason: string): void;
  finish(attempt: Attempt, end: LeaderEnd): void;
}

/**
 * A waiter (bash's chain: the spawner) gone without its `x` line took the
 * exit status with it: the attempt ends `lost` (a starting one fails). It
 * is seen gone twice, a check apart, first: its last lines may still be in
 * the pipe.
 */
export async function checkHolders(attempts: Iterable<Attempt>, startLimitMs: number, ends: AttemptEnds): Promise<void> {
  for (const attempt of attempts) {
    if (attempt.chain === 'bash') {
      if (!attempt.generation.exited) {
        // A gate that never reported (its open of the job's stdin hangs): nothing was released, the job goes back.
        if (attempt.phase === 'starting' && performance.now() - attempt.sentMs > startLimitMs) ends.failStart(attempt, `no answer within ${startLimitMs} ms`);
        continue;
      }
      if (!attempt.waiterGone) attempt.waiterGone = true;
      else if (attempt.phase === 'starting') ends.failStart(attempt, `the spawner (pid ${attempt.generation.child.pid}) died`);
      else ends.finish(attempt, { lost: `the spawner (pid ${attempt.generation.child.pid}) that reaps this command died, and the exit status with it` });
      continue;
    }
    const waiter = attempt.waiter;
    if (waiter === undefined) {
      // A waiter that died before its p line named it: nothing was released (the release end closes
      // now, so a gate that still appears exits 125), and the job goes back.
      if (attempt.phase === 'starting' && performance.now() - attempt.sentMs > startLimitMs) ends.failStart(attempt, `no answer within ${startLimitMs} ms`);
      continue;
    }
    const now = await processStart(waiter.pid).catch(() => undefined);
    const alive = now === undefined || (now !== null && !isDeadState(now.state) && (waiter.start === null || now.start === waiter.start));
    if (alive) {
      if (now != null) waiter.start ??= now.start;
      attempt.waiterGone = false;
    } else if (!attempt.waiterGone) {
      attempt.waiterGone = true;
    } else if (attempt.phase === 'starting') {
      ends.failStart(attempt, `its waiter (pid ${waiter.pid}) died`);
    } else {
      ends.finish(attempt, { lost: `the spawner's waiter of this command (pid ${waiter.pid}) died, and the exit status with it` });
    }
  }
}
