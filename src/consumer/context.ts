/**
 * Options of every consumer entry point, normalised once (p-queue style), the
 * events a consumer reports, and the cache of immutable specs.
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import { CANCEL_GRACE, LEASE_DEFAULT, LEASE_MAX, LEASE_MIN, OUTPUT_MAX } from '../base/constants.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { checkDuration, checkFunction, checkInteger, checkMethods, checkOptionsObject, checkString, checkStrings } from '../base/option-checks.ts';
import type { Finding } from '../records/findings.ts';
import type { Identity } from '../model/identity.ts';
import { selfIdentity } from '../model/identity.ts';
import { openQueue, type Queue } from '../model/queue.ts';
import { probeFilesystem } from '../fs/safefs.ts';
import { readRecord, readRecordNow, type Inspection, type ReceiptOutcome, type ReceiptReason, type SpecRecord } from '../records/codec.ts';
import type { Dir, SafeFsSeam } from '../fs/safefs.ts';
import { LeaseWatch } from '../model/lease-watch.ts';
import { AllowList } from './allow.ts';
import { openCgroupBase, type CgroupBase } from './cgroup.ts';

/** Options every consumer entry point takes (`Worker`, `claimNext`, `recover`), each with its default. */
export interface ConsumerOptions {
  /**
   * Lease of every claim and of the worker registration (LEASE-1, WORKER-1),
   * LEASE_MIN to LEASE_MAX.
   * @default LEASE_DEFAULT (30000 ms)
   */
  leaseMs?: number;
  /**
   * Glob patterns for `argv[0]` (EXEC-9, see allow.ts). A command job whose
   * argv[0] matches none is rejected with reason not_allowed.
   * @default undefined: every command is allowed
   */
  allow?: readonly string[];
  /**
   * The consumer's own bound on kept output per stream; the effective bound
   * is min(spec.max_output_bytes, this) (EXEC-1).
   * @default OUTPUT_MAX (67108864)
   */
  maxOutputBytes?: number;
  /**
   * How long a shutdown waits for running attempts to end on their own
   * before stopping them (WORKER-3): 0 or more ms, or Infinity to wait for
   * them however long they take.
   * @default CANCEL_GRACE (10000 ms)
   */
  shutdownGraceMs?: number;
  /**
   * A cgroup v2 directory this consumer may create children in (EXEC-16):
   * each command attempt runs in a child cgroup of it, and whatever is left
   * there when the attempt ends (a process that left the group by setsid) is
   * killed. Checked before anything runs (USAGE or IO naming the directory).
   * Only a Worker runs commands: claimNext and recover check it and run none.
   * @default undefined: only the process group is stopped
   */
  cgroup?: string;
  /** @default systemClock */
  clock?: Clock;
  /** Filesystem seam passed to every safefs call (fault injection). @default node:fs/promises */
  fs?: SafeFsSeam;
  /**
   * Receives progress events, synchronously as they happen. A listener that
   * throws, or an async one that rejects, is ignored: its failure never
   * stops the consumer. @default none
   */
  onEvent?: (event: ConsumerEvent) => void;
}

export type { ReceiptOutcome, ReceiptReason } from '../records/codec.ts';

/** What a consumer reports as it goes. `queue` is the queue root. */
export type ConsumerEvent =
  | { type: 'claimed'; queue: string; job_id: string; gen: number; recovered: boolean }
  | { type: 'started'; queue: string; job_id: string; gen: number; attempt: number }
  | { type: 'finished'; queue: string; job_id: string; gen: number; outcome: ReceiptOutcome; exit_code: number; reason: ReceiptReason; attempts: number }
  | { type: 'ended'; queue: string; job_id: string; gen: number; reason: string; retry_at_ms: number }
  | { type: 'superseded'; queue: string; job_id: string; gen: number }
  | { type: 'unproven'; queue: string; job_id: string; gen: number; clause: string; reason: string }
  /** A finishing step the system refused (RCPT-7, EXEC-11); it is tried again while the claim's lease holds. */
  | { type: 'pending'; queue: string; job_id: string; gen: number; step: 'receipt' | 'end' | 'proof'; reason: string; error?: FsjobError }
  /** The worker stopped trying to finish a job it claimed: the claim stays open for RECOV-1. */
  | { type: 'left'; queue: string; job_id: string; gen: number; reason: string }
  | { type: 'skipped'; queue: string; job_id: string; reason: string }
  | { type: 'guardian'; state: 'down' | 'restarted' }
  /**
   * The spawner that starts the commands (spawner.ts) died ('down': no command job is claimed until it is back) or
   * is back; 'unavailable': it cannot run on this system (`reason` says why) and node forks each command itself.
   */
  | { type: 'spawner'; state: 'down' | 'restarted' | 'unavailable'; reason?: string }
  /** PAUSE-1: the queue's pause.json appeared (nothing is claimed there) or went away. */
  | { type: 'paused'; queue: string }
  | { type: 'resumed'; queue: string }
  /** WORKER-3: 'draining' when a shutdown starts with attempts running; 'stopping' when the grace ended with some still running. */
  | { type: 'shutdown'; phase: 'draining' | 'stopping'; reason: string; running: number; grace_ms: number }
  | { type: 'error'; queue: string; job_id: string | null; error: FsjobError };

/** The normalised options every module below works with. */
export interface Context {
  clock: Clock;
  fs: SafeFsSeam | undefined;
  leaseMs: number;
  maxOutputBytes: number;
  shutdownGraceMs: number;
  allow: AllowList | null;
  /** EXEC-16: where each command attempt gets its own cgroup, when the consumer has one. */
  cgroup?: CgroupBase;
  /** Our worker id (LAYOUT-9), or null for one-shot tools (claim records say which). */
  workerId: string | null;
  self: Identity;
  specs: SpecCache;
  /** Foreign leases watched on the monotonic clock (LEASE-4). */
  leases: LeaseWatch;
  emit: (event: ConsumerEvent) => void;
}

/**
 * ConsumerOptions as a JavaScript caller may pass them: each refusal is
 * USAGE naming the option as its `field` (base/option-checks.ts). A Worker
 * checks them when it is made; makeContext again for claimNext and recover.
 */
export function checkConsumerOptions(options: unknown, caller: string): void {
  checkOptionsObject(options, caller);
  if (options === undefined) return;
  checkInteger(options, caller, 'leaseMs', LEASE_MIN, LEASE_MAX, 'LEASE-1');
  checkStrings(options, caller, 'allow');
  checkInteger(options, caller, 'maxOutputBytes', 0, Number.MAX_SAFE_INTEGER, 'EXEC-1');
  checkDuration(options, caller, 'shutdownGraceMs', 0, true, 'WORKER-3');
  checkString(options, caller, 'cgroup');
  checkMethods(options, caller, 'clock', ['nowMs', 'sleep']);
  checkMethods(options, caller, 'fs', ['open', 'link', 'rename', 'unlink', 'mkdir', 'rm']);
  checkFunction(options, caller, 'onEvent');
}

export async function makeContext(options: ConsumerOptions, workerId: string | null, caller = 'claimNext/recover'): Promise<Context> {
  checkConsumerOptions(options, caller);
  const leaseMs = options.leaseMs ?? LEASE_DEFAULT;
  const maxOutputBytes = options.maxOutputBytes ?? OUTPUT_MAX;
  const shutdownGraceMs = options.shutdownGraceMs ?? CANCEL_GRACE;
  const onEvent = options.onEvent;
  const clock = options.clock ?? systemClock;
  const cgroup = options.cgroup === undefined ? undefined : await openCgroupBase(options.cgroup);
  return {
    ...(cgroup === undefined ? {} : { cgroup }),
    clock,
    fs: options.fs,
    leaseMs,
    maxOutputBytes: Math.min(maxOutputBytes, OUTPUT_MAX),
    shutdownGraceMs,
    allow: options.allow === undefined ? null : new AllowList(options.allow),
    workerId,
    self: await selfIdentity(),
    specs: new SpecCache(),
    leases: new LeaseWatch(clock),
    emit: (event) => {
      try {
        // An async listener (its type, returning void, allows one) that rejects would be an unhandled rejection: a crash.
        const returned: unknown = onEvent?.(event);
        if (returned instanceof Promise) returned.catch(ignoreListenerFailure);
      } catch {
        // A listener's bug must not take the protocol down with it.
      }
    },
  };
}

function ignoreListenerFailure(): void {
  // As a listener that throws: its failure is its own.
}

export function newWorkerId(): string {
  return randomBytes(8).toString('hex');
}

/** Opens a queue with the context's fs seam (an opened queue without that seam is reopened with it). */
export function openWith(root: string | Queue, ctx: Pick<Context, 'fs' | 'clock'>): Promise<Queue> {
  if (typeof root !== 'string' && (ctx.fs === undefined || root.fsOptions.fs === ctx.fs)) return Promise.resolve(root);
  const dir = typeof root === 'string' ? root : root.root;
  return openQueue(dir, { clock: ctx.clock, ...(ctx.fs === undefined ? {} : { fs: ctx.fs }) });
}

/** openWith, then FS-2's probe: a long-running consumer refuses a filesystem without FS-1's operations before it serves the queue. */
export async function openServed(root: string | Queue, ctx: Pick<Context, 'fs' | 'clock'>): Promise<Queue> {
  const queue = await openWith(root, ctx);
  await probeFilesystem(queue.paths.dir('tmp'), queue.fsOptions);
  return queue;
}

/** A spec as read once: valid, or why the job will be rejected (CLAIM-6.1). */
export type SpecView =
  | { ok: true; spec: SpecRecord }
  | { ok: false; reason: 'invalid_spec' | 'unsupported_version'; message: string; findings: Finding[] };

const SPEC_CACHE_MAX = 20_000;

/**
 * spec.json never changes once a job is published (spec/spec-record.md), so a spec
 * is read once per job. Bounded: the oldest entries are dropped first.
 */
export class SpecCache {
  private readonly entries = new Map<string, SpecView>();

  /**
   * The job's spec, or undefined when the job directory does not exist (yet,
   * or any more). `gated` reads it from jobs/<id>.gated (GATE-1): the same
   * bytes, which the opening of the gate does not change.
   */
  async get(queue: Queue, id: string, gated = false): Promise<SpecView | undefined> {
    // Kept apart by name: a spec read at the gated name says nothing of whether jobs/<id> exists.
    const key = `${queue.root}\0${id}`;
    const cached = this.entries.get(key);
    if (cached !== undefined) return cached;
    let read: Inspection<SpecRecord> | undefined;
    try {
      const path = gated ? `${queue.paths.gatedJob(id)}/spec.json` : queue.paths.jobFile(id, 'spec.json');
      read = await readRecord(path, 'spec', { ...queue.fsOptions, expectedJobId: id, allowMissing: true });
    } catch (error) {
      if (isFsjobError(error, 'NOT_FOUND')) return undefined;
      throw error;
    }
    return this.keep(key, read);
  }

  /**
   * The job's spec, read through the handle of its directory that a visit
   * holds (model/queue-dirs.ts) when it is not cached.
   */
  getIn(queue: Queue, id: string, dir: Dir): SpecView {
    const key = `${queue.root}\0${id}`;
    // Synchronous (codec.ts, readRecordNow): its calls are, and the claim's walk reads a spec per job.
    return this.entries.get(key) ?? this.keep(key, readRecordNow(dir, 'spec.json', 'spec', { expectedJobId: id, allowMissing: true }));
  }

  private keep(key: string, read: Inspection<SpecRecord> | undefined): SpecView {
    let view: SpecView;
    if (read === undefined) {
      view = { ok: false, reason: 'invalid_spec', message: 'the job directory has no spec.json', findings: [] };
    } else if (read.ok) {
      view = { ok: true, spec: read.value };
    } else {
      const first = read.findings[0];
      view = {
        ok: false,
        reason: first?.code === 'RECORD_VERSION' ? 'unsupported_version' : 'invalid_spec',
        message: first === undefined ? 'spec.json is invalid' : `spec.json is invalid (${first.clause}): ${first.message}`,
        findings: read.findings,
      };
    }
    if (this.entries.size >= SPEC_CACHE_MAX) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
    this.entries.set(key, view);
    return view;
  }

  forget(queue: Queue, id: string): void {
    this.entries.delete(`${queue.root}\0${id}`);
    this.entries.delete(`${queue.root}\0${id}\0gated`);
  }
}
