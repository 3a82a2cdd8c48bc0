/**
 * Records the runner plants to set up a precise state: claims of dead, live
 * or foreign owners, executions, ends, states and receipts. Each is a valid
 * record (section 5) unless a case damages it on purpose.
 */
import { spawn } from 'node:child_process';
import { PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { processStart, selfIdentity, type Identity } from '../../src/model/identity.ts';
import type { ClaimRecord, EndRecord, ExecRecord, ReceiptRecord, StateRecord } from '../../src/records/codec.ts';
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

export function claimRecord(jobId: string, gen: number, owner: Identity, claimedMs = Date.now(), leaseMs = 30_000): ClaimRecord {
  return { fsjob: PROTOCOL_VERSION, type: 'claim', job_id: jobId, gen, owner, worker_id: null, claimed_ms: claimedMs, lease_ms: leaseMs };
}

export function execRecord(jobId: string, gen: number, owner: Identity): ExecRecord {
  return {
    fsjob: PROTOCOL_VERSION,
    type: 'exec',
    job_id: jobId,
    gen,
    attempt: 1,
    group: { pgid: owner.pid, start: owner.start, boot_id: owner.boot_id, pid_ns: owner.pid_ns },
    recorded_ms: Date.now(),
  };
}

export function endRecord(jobId: string, gen: number): EndRecord {
  const now = Date.now();
  return { fsjob: PROTOCOL_VERSION, type: 'end', job_id: jobId, gen, reason: 'failed', counted: true, retry_at_ms: now, status: { exit: 1, signal: null }, ended_ms: now };
}

export function stateRecord(jobId: string, gen: number): StateRecord {
  return { fsjob: PROTOCOL_VERSION, type: 'state', job_id: jobId, gen, phase: 'claimed', heartbeat_ms: Date.now(), attempt: null, stdout_bytes: 0, stderr_bytes: 0, progress: null };
}

export function receiptRecord(jobId: string, gen: number, by: Identity): ReceiptRecord {
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
  };
}
