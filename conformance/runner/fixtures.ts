/**
 * The one sample-record factory: specs, claims of dead, live or foreign
 * owners, executions, states, ends, cancels and receipts, as valid records
 * (spec/records.md) unless a caller damages one on purpose. The conformance runner
 * stages and plants with it, and so do the tests (test/support) and the
 * benchmarks (bench/): a spec's defaults come from the reference producer's
 * own normalisation (src/producer/request.ts), nowhere else.
 *
 * Every builder takes the fields that matter and then `more`, which
 * overrides any member. Staging is setup, not the thing under test: the
 * conformance inspector (inspect.ts) reads the disk with its own code, and
 * cases/producer.ts checks a producer's spec against literal values.
 */
import { spawn } from 'node:child_process';
import { LEASE_DEFAULT, PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { processStart, selfIdentity, type Identity } from '../../src/model/identity.ts';
import { normalizeChecked, specFromRequest } from '../../src/producer/request.ts';
import type { CancelRecord, ClaimRecord, EndRecord, ExecRecord, JobRequest, ReceiptRecord, SpecRecord, StateRecord } from '../../src/records/codec.ts';
import { sleep } from './process.ts';

export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
/** A boot id no machine has: owners with it are foreign (ID-1). */
export const FOREIGN_BOOT_ID = '00000000-0000-4000-8000-0000f0e1d2c3';

export interface Sleeper {
  pid: number;
  start: string;
  stop: () => Promise<void>;
}

/** A live process on this host (a `sleep`), with its recorded start (ID-2). */
export async function sleeper(seconds = 600): Promise<Sleeper> {
  const child = spawn('sleep', [String(seconds)], { stdio: 'ignore', detached: true });
  const pid = child.pid;
  if (pid === undefined) throw new Error('cannot start sleep');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let start: string | undefined;
  for (let i = 0; i < 100 && start === undefined; i++) {
    const info = await processStart(pid);
    if (info !== null) start = info.start;
    else await sleep(10);
  }
  if (start === undefined) throw new Error(`cannot read the start of pid ${pid}`);
  return {
    pid,
    start,
    stop: async () => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        return;
      }
      await exited;
    },
  };
}

/** The identity of a process that existed and is now dead (its pid free or reused). */
export async function deadOwner(): Promise<Identity> {
  const s = await sleeper();
  await s.stop();
  return { ...(await selfIdentity()), pid: s.pid, start: s.start };
}

export async function ownerOf(pid: number, start: string): Promise<Identity> {
  return { ...(await selfIdentity()), pid, start };
}

export function foreignOwner(self: Identity): Identity {
  return { ...self, host: 'elsewhere.example', boot_id: FOREIGN_BOOT_ID, pid: 4242, start: '12345' };
}

/**
 * The spec the reference producer writes for `request` (SPEC-2: every field,
 * defaults filled), and its stdin bytes. A request without `cwd` gets the
 * current directory, as an enqueue from here would.
 */
export function specRecord(id: string, request: JobRequest, producer: Identity, createdMs = Date.now()): { spec: SpecRecord; stdin: Buffer | null } {
  const normalized = normalizeChecked(request);
  return { spec: specFromRequest(id, createdMs, normalized, producer), stdin: normalized.stdin === null ? null : Buffer.from(normalized.stdin) };
}

export function claimRecord(jobId: string, gen: number, owner: Identity, claimedMs = Date.now(), leaseMs = LEASE_DEFAULT, more: Partial<ClaimRecord> = {}): ClaimRecord {
  return { fsjob: PROTOCOL_VERSION, type: 'claim', job_id: jobId, gen, owner, worker_id: null, claimed_ms: claimedMs, lease_ms: leaseMs, ...more };
}

/** The execution of attempt 1 in `owner`'s own process group (a command job); `more` may say `group: null` (a payload job). */
export function execRecord(jobId: string, gen: number, owner: Identity, more: Partial<ExecRecord> = {}): ExecRecord {
  return {
    fsjob: PROTOCOL_VERSION,
    type: 'exec',
    job_id: jobId,
    gen,
    attempt: 1,
    group: { pgid: owner.pid, start: owner.start, boot_id: owner.boot_id, pid_ns: owner.pid_ns },
    recorded_ms: Date.now(),
    ...more,
  };
}

/** A generation that failed with exit 1 and counts as an attempt, retryable now. */
export function endRecord(jobId: string, gen: number, more: Partial<EndRecord> = {}): EndRecord {
  const now = Date.now();
  return { fsjob: PROTOCOL_VERSION, type: 'end', job_id: jobId, gen, reason: 'failed', counted: true, retry_at_ms: now, status: { exit: 1, signal: null }, ended_ms: now, ...more };
}

export function stateRecord(jobId: string, gen: number, more: Partial<StateRecord> = {}): StateRecord {
  return { fsjob: PROTOCOL_VERSION, type: 'state', job_id: jobId, gen, phase: 'claimed', heartbeat_ms: Date.now(), attempt: null, stdout_bytes: 0, stderr_bytes: 0, progress: null, ...more };
}

export function cancelRecord(jobId: string, force: boolean, by: Identity, more: Partial<CancelRecord> = {}): CancelRecord {
  return { fsjob: PROTOCOL_VERSION, type: 'cancel', job_id: jobId, force, requested_ms: Date.now(), by, reason: null, ...more };
}

/** A success of attempt 1 whose outputs were empty (RCPT-5); `more` overrides any member. */
export function receiptRecord(jobId: string, gen: number, by: Identity, more: Partial<ReceiptRecord> = {}): ReceiptRecord {
  const now = Date.now();
  const empty = { gen, bytes_total: 0, bytes_kept: 0, truncated: false, sha256: EMPTY_SHA256 };
  return {
    fsjob: PROTOCOL_VERSION,
    type: 'receipt',
    job_id: jobId,
    gen,
    outcome: 'succeeded',
    exit_code: 0,
    reason: null,
    message: null,
    attempts: 1,
    status: { exit: 0, signal: null },
    started_ms: now - 10,
    finished_ms: now,
    stdout: empty,
    stderr: empty,
    result: null,
    by,
    ...more,
  };
}
