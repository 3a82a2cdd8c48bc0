/**
 * The values and defaults of `fsjob status`'s options: status.ts shows them
 * in its help, status-run.ts applies them. A module of their own, so that
 * neither imports the other (the help loads no queue code).
 */
import type { JobStatus } from '../../model/job.ts';
import type { Outcome } from '../../producer/index.ts';

/** The statuses of STATUS-1, in the order of fsjob status --help and of the counts line. */
export const STATUSES: readonly JobStatus[] = ['queued', 'held', 'blocked', 'delayed', 'retrying', 'claimed', 'running', 'cancelling', 'expired', 'orphaned', 'finished', 'damaged'];
/** The outcomes of a finished job, in the same order. */
export const OUTCOMES: readonly Outcome[] = ['succeeded', 'failed', 'timed_out', 'expired', 'cancelled', 'force_stopped', 'lost', 'rejected'];
/** The jobs fsjob status lists without --limit. */
export const DEFAULT_LIMIT = 20;
/**
 * Up to this many jobs, fsjob status counts each job's status and outcome
 * (one look at every job, about 0.1-0.3 ms each); above it, the summary is
 * the ready index's (two listings: 0.8-1.4 s at 100,000 jobs where the full
 * count took 50-72 s, bench/results/2026-12-01-status.md) and --exact asks
 * for the full count.
 */
export const EXACT_COUNT_MAX = 2000;
