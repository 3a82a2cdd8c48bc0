/**
 * What a Worker did, as `run()` resolves with it: claims, receipts and end
 * records by kind, the scans of its queues and the claims it lost to other
 * consumers, and the jobs it could not finish. Counted from the events the
 * Worker reports (ConsumerEvent).
 */
import type { ConsumerEvent } from './context.ts';

/** What a Worker did, when `run()` resolves. */
export interface WorkerSummary {
  workerId: string;
  /** Claims taken (each is one generation of one job). */
  claimed: number;
  /** Receipts published, by outcome. */
  finished: Record<string, number>;
  /** End records published, by reason. */
  ended: Record<string, number>;
  superseded: number;
  unproven: number;
  errors: number;
  /** Scans of a queue (one pass over its ready index in claim order). */
  scans: number;
  /** Claims lost to another consumer (CLAIM-5): what a pool of consumers racing for the same job costs. */
  raced: number;
  /** Jobs this worker claimed and could not finish (RCPT-7, EXEC-11): their claims stay open for RECOV-1. */
  left: { queue: string; job_id: string; gen: number; reason: string }[];
}

export function newSummary(workerId: string): WorkerSummary {
  return { workerId, claimed: 0, finished: {}, ended: {}, superseded: 0, unproven: 0, errors: 0, scans: 0, raced: 0, left: [] };
}

/** Counts one event in `summary`. */
export function tally(summary: WorkerSummary, event: ConsumerEvent): void {
  const s = summary;
  if (event.type === 'claimed') s.claimed += 1;
  else if (event.type === 'finished') s.finished[event.outcome] = (s.finished[event.outcome] ?? 0) + 1;
  else if (event.type === 'ended') s.ended[event.reason] = (s.ended[event.reason] ?? 0) + 1;
  else if (event.type === 'superseded') s.superseded += 1;
  else if (event.type === 'unproven') s.unproven += 1;
  else if (event.type === 'error') s.errors += 1;
  else if (event.type === 'left') s.left.push({ queue: event.queue, job_id: event.job_id, gen: event.gen, reason: event.reason });
}
