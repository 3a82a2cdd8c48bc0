/**
 * Operator reads: one job in full, and the queue's workers. Nothing here
 * writes. Status is always derived from which records exist (STATUS-1),
 * never from state.<g>.json or the ready index. The jobs of a queue, a
 * summary each, are job-list.ts's.
 */
import path from 'node:path';
import { checkMethods, checkOptionsObject } from '../base/option-checks.ts';
import { attemptsUsed, deriveStatus, executionState, lastRenewalMs, readGenRecord, readJobRecord, type JobFiles, type JobStatus, type JobStatusView } from '../model/job.ts';
import { listDir, statEntry } from '../fs/safefs.ts';
import { readRecord, type ClaimRecord, type EndRecord, type ExecRecord, type ReceiptRecord, type SpecRecord, type StateRecord, type WorkerRecord } from '../records/codec.ts';
import type { Finding } from '../records/findings.ts';
import { judgeOwner, type OwnerJudgement, type Verdict } from '../model/identity.ts';
import { assertQueue, type Queue } from '../model/queue.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import { findJob } from './jobs.ts';
import { WORKER_ID_PATTERN } from '../records/names.ts';

/** One generation of a job as `jobStatus` reads it: its claim, exec, state and end records. */
export interface GenerationView {
  gen: number;
  claim: ClaimRecord | null;
  exec: ExecRecord | null;
  state: StateRecord | null;
  end: EndRecord | null;
  /** Sizes of stdout.<g> and stderr.<g>, null when absent. */
  stdoutBytes: number | null;
  stderrBytes: number | null;
  /** Records of this generation that exist but are invalid (REC-4). */
  findings: Finding[];
}

/** One job in full, as `jobStatus` reads it: its spec, status (STATUS-1), generations and receipt. */
export interface JobReport {
  id: string;
  dir: string;
  /** The spec, or null when spec.json is missing or invalid (see findings). */
  spec: SpecRecord | null;
  /** STATUS-1. `damaged` when a record the status depends on is invalid. */
  status: JobStatus;
  /** The current generation: the highest claim, 0 when unclaimed. */
  gen: number;
  /** The current claim's owner, judged (ID-6, ID-7), when the claim is open. */
  owner: OwnerJudgement | null;
  receipt: ReceiptRecord | null;
  /** Attempts used (RETRY-1). */
  attempts: number;
  cancel: { graceful: boolean; force: boolean };
  generations: GenerationView[];
  /** Output files present, oldest generation first. */
  outputs: { stream: 'stdout' | 'stderr'; gen: number; bytes: number }[];
  /** Entries that are not protocol names, and protocol names that are not regular files. */
  unknown: string[];
  hazards: string[];
  findings: Finding[];
  /**
   * What the live owner of a running job has not done yet although its
   * command has ended (its process group is gone): publish the receipt or end
   * record. Null otherwise. An owner whose writes are refused (a full disk, a
   * read-only queue, no descriptor left) keeps trying while its lease holds
   * (RCPT-7), so this says how long ago it last renewed.
   */
  pending: string | null;
}

/** Options of the read-only calls (`jobStatus`, `listJobs`, `liveWorkers`). */
export interface ReadOptions {
  /** @default systemClock */
  clock?: Clock;
}

async function sizeOf(queue: Queue, target: string): Promise<number | null> {
  try {
    const stats = await statEntry(target, queue.fsOptions);
    return stats?.kind === 'file' ? stats.size : null;
  } catch {
    return null;
  }
}

async function readGen<K extends 'claim' | 'exec' | 'state' | 'end'>(queue: Queue, files: JobFiles, kind: K, gen: number, has: boolean, findings: Finding[]) {
  if (!has) return null;
  const read = await readGenRecord(queue, files, kind, gen);
  if (!read.ok) {
    findings.push(...read.findings);
    return null;
  }
  return read.value;
}

/** Everything known about one job (LAYOUT-5): its spec, derived status, every generation, the receipt, attempts and outputs. */
export async function jobStatus(queue: Queue, id: string, options: ReadOptions = {}): Promise<JobReport> {
  assertQueue(queue, 'jobStatus');
  checkOptionsObject(options, 'jobStatus');
  checkMethods(options, 'jobStatus', 'clock', ['nowMs', 'sleep']);
  const files = await findJob(queue, id);
  const findings: Finding[] = [];
  let spec: SpecRecord | null = null;
  if (files.spec) {
    const read = await readJobRecord(queue, files, 'spec');
    if (read.ok) spec = read.value;
    else findings.push(...read.findings);
  }
  const view = await deriveStatus(queue, files, { ...(options.clock === undefined ? {} : { clock: options.clock }), ...(spec === null ? {} : { spec }) });
  findings.push(...view.findings);

  const gens = new Set<number>([...files.claims, ...files.execs, ...files.ends, ...files.states, ...files.stdouts, ...files.stderrs]);
  const generations: GenerationView[] = [];
  const outputs: JobReport['outputs'] = [];
  for (const gen of [...gens].sort((a, b) => a - b)) {
    const own: Finding[] = [];
    const stdoutBytes = files.stdouts.has(gen) ? await sizeOf(queue, path.join(files.dir, `stdout.${gen}`)) : null;
    const stderrBytes = files.stderrs.has(gen) ? await sizeOf(queue, path.join(files.dir, `stderr.${gen}`)) : null;
    generations.push({
      gen,
      claim: await readGen(queue, files, 'claim', gen, files.claims.includes(gen), own),
      exec: await readGen(queue, files, 'exec', gen, files.execs.has(gen), own),
      state: await readGen(queue, files, 'state', gen, files.states.has(gen), own),
      end: await readGen(queue, files, 'end', gen, files.ends.has(gen), own),
      stdoutBytes,
      stderrBytes,
      findings: own,
    });
    if (stdoutBytes !== null) outputs.push({ stream: 'stdout', gen, bytes: stdoutBytes });
    if (stderrBytes !== null) outputs.push({ stream: 'stderr', gen, bytes: stderrBytes });
  }
  return {
    id,
    dir: files.dir,
    spec,
    status: view.status,
    gen: files.gen,
    owner: view.owner ?? null,
    receipt: view.receipt ?? null,
    attempts: view.receipt?.attempts ?? (await attemptsUsed(queue, files)),
    cancel: { graceful: files.cancel, force: files.cancelForce },
    generations,
    outputs,
    unknown: files.unknown.map((entry) => entry.name),
    hazards: files.hazards.map((entry) => entry.name),
    findings,
    pending: await pendingFinish(queue, files, view, options.clock ?? systemClock),
  };
}

/** JobReport.pending: the command of the current generation has ended, its owner is alive and has published nothing since. */
async function pendingFinish(queue: Queue, files: JobFiles, view: JobStatusView, clock: Clock): Promise<string | null> {
  if (view.status !== 'running' || view.owner?.verdict !== 'alive' || view.claim === undefined) return null;
  if ((await executionState(queue, files, view.gen, { clock })) !== 'stopped') return null;
  // An invalid state record hides the renewal (SEC-10): count from the claim then.
  const ago = Math.max(0, clock.nowMs() - ((await lastRenewalMs(queue, files, view.claim)) ?? view.claim.claimed_ms));
  return (
    `the command has ended (its process group is gone) but its owner, alive, has not published the receipt or end record; ` +
    `the lease was last renewed ${Math.round(ago / 1000)} s ago (lease ${view.claim.lease_ms / 1000} s): if that grows, the owner cannot write to the queue ` +
    `and its log says why; it tries again while its lease holds (RCPT-7), then leaves the claim open for fsjob recover once it is gone`
  );
}

/** A registered worker (`workers/<w>.json`, WORKER-1) and whether it is alive. */
export interface WorkerView {
  workerId: string;
  /** The registration, or null when it is invalid (see findings). */
  record: WorkerRecord | null;
  /** WORKER-1: ID-6 on this host, the lease (ID-7) for a foreign owner. */
  verdict: Verdict;
  /** A registration whose owner is dead: `recover` removes it (WORKER-1). */
  stale: boolean;
  reason: string;
  findings: Finding[];
}

/** Every registration in workers/ (spec/records.md), with its owner judged (WORKER-1). Registrations are informational. */
export async function liveWorkers(queue: Queue, options: ReadOptions = {}): Promise<WorkerView[]> {
  assertQueue(queue, 'liveWorkers');
  const clock = options.clock ?? systemClock;
  const views: WorkerView[] = [];
  for (const entry of await listDir(queue.paths.dir('workers'), queue.fsOptions)) {
    if (entry.name.startsWith('.') || !entry.name.endsWith('.json')) continue;
    const workerId = entry.name.slice(0, -'.json'.length);
    if (!WORKER_ID_PATTERN.test(workerId)) continue;
    const read = await readRecord(queue.paths.worker(workerId), 'worker', { ...queue.fsOptions, expectedWorkerId: workerId, allowMissing: true });
    if (read === undefined) continue; // removed while we listed
    if (!read.ok) {
      views.push({ workerId, record: null, verdict: 'unknown', stale: false, reason: 'the registration is invalid', findings: read.findings });
      continue;
    }
    const record = read.value;
    const judged = await judgeOwner(record.owner, { nowMs: clock.nowMs(), lastRenewalMs: record.heartbeat_ms, leaseMs: record.lease_ms });
    views.push({ workerId, record, verdict: judged.verdict, stale: judged.verdict === 'dead', reason: judged.reason, findings: [] });
  }
  return views;
}
