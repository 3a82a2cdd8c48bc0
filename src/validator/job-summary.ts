/**
 * What a job scan (job-scan.ts) hands the queue-wide checks (queue.ts,
 * keys.ts, gates.ts) about one job: plain data, since it may cross a worker
 * thread's boundary (scan-pool.ts).
 */
import type { ClaimRecord, Group, ReceiptRecord } from '../records/codec.ts';
import type { GateSummary } from './job-gate.ts';

/** What the queue-wide checks need to know about a job. Plain data (it may cross a worker boundary). */
export interface JobSummary {
  id: string;
  /** A receipt.json entry exists: the job is finished (STATUS-1), whatever else is wrong. */
  finished: boolean;
  /** The outcome of a valid receipt (AFTER-1 judges a dependency by it). */
  outcome?: ReceiptRecord['outcome'];
  /** The directory is jobs/<id>.gated (GATE-1). */
  gated?: boolean;
  /** What the gates of an unfinished job say (spec/gates.md). */
  gate?: GateSummary;
  /** The directory could not be examined: it was swapped for something else while the audit ran, or the filesystem refused it (ENTRY_UNREADABLE). */
  unreadable?: boolean;
  /** From a valid spec of an unfinished job; undefined when finished, or the spec is missing or invalid. */
  spec?: { priority: number; dedupe: string | null; lane: string | null; laneSlots: number };
  /** The current claim when it is open (no end record, no receipt) and readable. */
  open?: OpenClaim;
}

export interface OpenClaim {
  gen: number;
  claim: ClaimRecord;
  /** LEASE-3: the later of claimed_ms and a valid state record's heartbeat_ms. */
  lastRenewalMs: number;
  /** The execution generation g recorded: none, a group (null for a payload job), or an unreadable record. */
  exec: { kind: 'none' } | { kind: 'invalid' } | { kind: 'recorded'; group: Group | null };
  /** Where findings about the claim and its execution point. */
  claimPath: string;
  execPath: string;
}
