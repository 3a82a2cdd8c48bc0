/**
 * What a job directory says (spec/claim.md): which records exist, whose
 * claim is open, how many attempts are used, and the job's derived status.
 *
 * Status is derived from which records exist, never from a mutable field
 * (STATUS-1). One listing of the directory answers most questions; records
 * are read only when their content matters (the current claim, an end's
 * retry time, a receipt's outcome).
 *
 * Anything at a record's name that is not a regular file (a planted symlink,
 * a FIFO) still occupies that name: link() will fail on it, so it counts for
 * generations and existence, and reading it yields a finding instead of a
 * value. A job whose status cannot be derived from valid records is
 * `damaged`: nobody acts on it and validate reports it.
 */
import { classifyJobEntry, genRecordName, type JobEntry } from './layout.ts';
import type { Dir, DirEntry } from '../fs/safefs.ts';
import { readRecordIn, type ClaimRecord, type EndRecord, type Inspection, type ReceiptRecord, type SpecRecord, type StateRecord } from '../records/codec.ts';
import type { Finding } from '../records/findings.ts';
import { isLocal, judgeOwner, type OwnerJudgement } from './identity.ts';
import { groupState } from './groups.ts';
import { gatedJobDir, jobDir, type Queue } from './queue.ts';
import { gateVerdict } from './gates.ts';
import { isFsjobError } from '../base/errors.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import type { LeaseWatch } from './lease-watch.ts';

export type JobStatus =
  | 'finished'
  | 'running'
  | 'claimed'
  | 'orphaned'
  | 'cancelling'
  | 'expired'
  | 'delayed'
  | 'retrying'
  | 'queued'
  | 'held'
  | 'blocked'
  | 'damaged';

/** The entries of one generation g, by what their names say. */
export interface GenEntries {
  claim?: DirEntry;
  exec?: DirEntry;
  state?: DirEntry;
  end?: DirEntry;
  stdout?: DirEntry;
  stderr?: DirEntry;
}

/**
 * One listing of a job directory, classified by LAYOUT-5/LAYOUT-6: the one
 * reading of what a job directory holds, for the reference (listJob) and the
 * validator (validator/job-scan.ts) alike.
 */
export interface JobListing {
  readonly id: string;
  readonly entries: readonly DirEntry[];
  readonly spec: boolean;
  readonly stdin: boolean;
  readonly receipt: boolean;
  readonly cancel: boolean;
  readonly cancelForce: boolean;
  /** A release.json entry exists (HOLD-1). */
  readonly release: boolean;
  /** The entries at the job-wide names, when present. */
  readonly named: { readonly spec?: DirEntry; readonly stdin?: DirEntry; readonly receipt?: DirEntry; readonly cancel?: DirEntry; readonly cancelForce?: DirEntry; readonly release?: DirEntry };
  /** Every generation named in the directory, with its entries. */
  readonly gens: ReadonlyMap<number, Readonly<GenEntries>>;
  /** Generations present, ascending, per record kind. */
  readonly claims: readonly number[];
  readonly execs: ReadonlySet<number>;
  readonly ends: ReadonlySet<number>;
  readonly states: ReadonlySet<number>;
  readonly stdouts: ReadonlySet<number>;
  readonly stderrs: ReadonlySet<number>;
  /** The current generation: the highest claim, 0 when there is none. */
  readonly gen: number;
  readonly temps: readonly DirEntry[];
  readonly unknown: readonly DirEntry[];
  /** Entries at a protocol name that are not regular files (SEC-2, SEC-3). */
  readonly hazards: readonly DirEntry[];
}

/** A job directory as the reference reads it: the listing and the handle its records are read through. */
export interface JobFiles extends JobListing {
  readonly dir: string;
  /** The directory is jobs/<id>.gated: the job is gated (GATE-1) and nothing may claim it (GATE-2). */
  readonly gated: boolean;
  /** The job directory's handle: every record of the job is read through it. */
  readonly handle: Dir;
}

/** LAYOUT-5/LAYOUT-6 over one listing (no system call). */
export function classifyJob(id: string, entries: readonly DirEntry[]): JobListing {
  const gens = new Map<number, GenEntries>();
  const sets = { claim: [] as number[], exec: new Set<number>(), end: new Set<number>(), state: new Set<number>(), stdout: new Set<number>(), stderr: new Set<number>() };
  const named: { spec?: DirEntry; stdin?: DirEntry; receipt?: DirEntry; cancel?: DirEntry; cancelForce?: DirEntry; release?: DirEntry } = {};
  const temps: DirEntry[] = [];
  const unknown: DirEntry[] = [];
  const hazards: DirEntry[] = [];
  for (const entry of entries) {
    const kind: JobEntry = classifyJobEntry(entry.name);
    if (kind.kind === 'temp') {
      temps.push(entry);
      continue;
    }
    if (kind.kind === 'unknown') {
      unknown.push(entry);
      continue;
    }
    if (entry.kind !== 'file') hazards.push(entry);
    switch (kind.kind) {
      case 'spec':
      case 'stdin':
      case 'receipt':
      case 'release':
        named[kind.kind] = entry;
        break;
      case 'cancel':
        if (kind.force) named.cancelForce = entry;
        else named.cancel = entry;
        break;
      default: {
        let slots = gens.get(kind.gen);
        if (slots === undefined) {
          slots = {};
          gens.set(kind.gen, slots);
        }
        slots[kind.kind] = entry;
        if (kind.kind === 'claim') sets.claim.push(kind.gen);
        else sets[kind.kind].add(kind.gen);
      }
    }
  }
  sets.claim.sort((a, b) => a - b);
  return {
    id,
    entries,
    spec: named.spec !== undefined,
    stdin: named.stdin !== undefined,
    receipt: named.receipt !== undefined,
    cancel: named.cancel !== undefined,
    cancelForce: named.cancelForce !== undefined,
    release: named.release !== undefined,
    named,
    gens,
    claims: sets.claim,
    execs: sets.exec,
    ends: sets.end,
    states: sets.state,
    stdouts: sets.stdout,
    stderrs: sets.stderr,
    gen: sets.claim.at(-1) ?? 0,
    temps,
    unknown,
    hazards,
  };
}

/**
 * One listing of a job's directory, wherever it is (GATE-4): jobs/<id>, else
 * jobs/<id>.gated, else jobs/<id> once more, for a gate only opens and may
 * open between the first two looks. An open job costs the one listing it
 * always did. Throws NOT_FOUND when the job is under neither name.
 */
export async function listJob(queue: Queue, id: string): Promise<JobFiles> {
  const open = jobDir(queue, id);
  try {
    return await listJobIn(id, open);
  } catch (error) {
    if (!isFsjobError(error, 'NOT_FOUND')) throw error;
  }
  try {
    return await listJobIn(id, gatedJobDir(queue, id), true);
  } catch (error) {
    if (!isFsjobError(error, 'NOT_FOUND')) throw error;
  }
  return listJobIn(id, open);
}

/** listJob through a handle the caller holds for its visit (model/queue-dirs.ts openJobDir); `gated` when it is jobs/<id>.gated. */
export async function listJobIn(id: string, handle: Dir, gated = false): Promise<JobFiles> {
  return listJobNow(id, handle, gated);
}

/** listJobIn, synchronously: one listing of the directory a visit holds (a consumer's walk lists a job per claim without a promise). */
export function listJobNow(id: string, handle: Dir, gated = false): JobFiles {
  const listing = classifyJob(id, handle.listNow()) as JobFiles & { dir: string; handle: Dir; gated: boolean };
  listing.dir = handle.path;
  listing.handle = handle;
  listing.gated = gated;
  return listing;
}

/** LEASE-3: the time of the last renewal of a claim: claimed_ms or a later heartbeat of a valid state record. */
export function renewedAt(claim: ClaimRecord, state: StateRecord | undefined): number {
  return state !== undefined && state.heartbeat_ms > claim.claimed_ms ? state.heartbeat_ms : claim.claimed_ms;
}

/** Reads a generation record of a job, with the expectations its name sets (REC-7). */
export function readGenRecord<K extends 'claim' | 'exec' | 'state' | 'end'>(
  queue: Queue,
  files: JobFiles,
  kind: K,
  gen: number,
): Promise<Inspection<import('../records/codec.ts').RecordByType[K]>> {
  return readRecordIn(files.handle, genRecordName(kind, gen), kind, { expectedJobId: files.id, expectedGen: gen }) as Promise<Inspection<import('../records/codec.ts').RecordByType[K]>>;
}

export function readJobRecord<K extends 'spec' | 'receipt'>(queue: Queue, files: JobFiles, kind: K) {
  return readRecordIn(files.handle, `${kind}.json`, kind, { expectedJobId: files.id });
}

/**
 * RETRY-1: attempts used = generations with an exec record, minus those whose
 * end record says the execution does not count (preemption). An end record
 * that cannot be read counts the attempt: never allow a start the spec may forbid.
 */
export async function attemptsUsed(queue: Queue, files: JobFiles): Promise<number> {
  let used = 0;
  for (const gen of files.execs) {
    if (files.ends.has(gen)) {
      const end = await readGenRecord(queue, files, 'end', gen);
      if (end.ok && !end.value.counted) continue;
    }
    used += 1;
  }
  return used;
}

/**
 * The time of the last lease renewal of claim g (LEASE-3): claimed_ms or a
 * later valid heartbeat; undefined when `state.<g>.json` exists but is
 * invalid (SEC-10: the renewal cannot be read).
 */
export async function lastRenewalMs(queue: Queue, files: JobFiles, claim: ClaimRecord): Promise<number | undefined> {
  if (!files.states.has(claim.gen)) return claim.claimed_ms;
  const state: Inspection<StateRecord> = await readGenRecord(queue, files, 'state', claim.gen);
  return state.ok ? renewedAt(claim, state.value) : undefined;
}

/**
 * ID-6/ID-7 for the owner of `claim`. A foreign owner is judged by its lease:
 * on the wall clock for reports (LEASE-3's bound), and only dead once a watch
 * of its renewal has completed (`leases`, LEASE-3, LEASE-4). A foreign claim
 * whose state.<g>.json is invalid has an unknown owner (SEC-10); a same-host
 * owner is judged by its process, so its state record does not matter.
 */
async function judgeClaimOwner(queue: Queue, files: JobFiles, claim: ClaimRecord, nowMs: number, leases: LeaseWatch | undefined): Promise<OwnerJudgement> {
  const renewal = await lastRenewalMs(queue, files, claim);
  if (renewal === undefined && !(await isLocal(claim.owner))) {
    return { verdict: 'unknown', basis: 'lease', reason: `foreign owner: state.${claim.gen}.json is invalid, so its last renewal cannot be read (SEC-10)` };
  }
  const lease = { nowMs, lastRenewalMs: renewal ?? claim.claimed_ms, leaseMs: claim.lease_ms };
  const byWall = await judgeOwner(claim.owner, lease);
  return leases === undefined ? byWall : leases.judge(`${queue.root}\0${claim.job_id}\0${claim.gen}`, lease, byWall);
}

export interface JobStatusView {
  status: JobStatus;
  gen: number;
  /** The current claim when it is open (or was readable). */
  claim?: ClaimRecord;
  /** The judgement of the current claim's owner when the claim is open. */
  owner?: OwnerJudgement;
  receipt?: ReceiptRecord;
  /** The end record of the current generation, when there is one. */
  end?: EndRecord;
  /** When a `delayed` job becomes claimable (its spec's not_before_ms, DELAY-1). */
  notBeforeMs?: number;
  /** retrying: milliseconds until the retry is due (RETRY-4: the wall clock's retry_at_ms or the monotonic watch, whichever ends first). */
  retryDueInMs?: number;
  /** blocked: the first dependency that is pending (AFTER-1). */
  awaiting?: string;
  /** Why the job is damaged, or problems met while deriving the status. */
  findings: Finding[];
}

export interface StatusOptions {
  clock?: Clock;
  /** A long-running judge's watch of foreign leases (LEASE-4). @default none: LEASE-3 alone */
  leases?: LeaseWatch;
  /** The job's spec when the caller has it already (it never changes). */
  spec?: SpecRecord;
}

/** STATUS-1, in its order. */
export async function deriveStatus(queue: Queue, files: JobFiles, options: StatusOptions = {}): Promise<JobStatusView> {
  const clock = options.clock ?? systemClock;
  const now = clock.nowMs();
  const gen = files.gen;
  if (files.receipt) {
    const receipt = await readJobRecord(queue, files, 'receipt');
    return receipt.ok ? { status: 'finished', gen, receipt: receipt.value, findings: [] } : { status: 'damaged', gen, findings: receipt.findings };
  }
  let end: EndRecord | undefined;
  if (gen > 0) {
    if (!files.ends.has(gen)) {
      // SEC-10: the open claim's content decides (its owner); a closed one counts by its name.
      const claim = await readGenRecord(queue, files, 'claim', gen);
      if (!claim.ok) return { status: 'damaged', gen, findings: claim.findings };
      const owner = await judgeClaimOwner(queue, files, claim.value, now, options.leases);
      const status: JobStatus = owner.verdict === 'dead' ? 'orphaned' : files.execs.has(gen) ? 'running' : 'claimed';
      return { status, gen, claim: claim.value, owner, findings: [] };
    }
    const ended = await readGenRecord(queue, files, 'end', gen);
    if (!ended.ok) return { status: 'damaged', gen, findings: ended.findings };
    end = ended.value;
  }
  const withEnd = end === undefined ? {} : { end };
  if (files.cancel || files.cancelForce) return { status: 'cancelling', gen, ...withEnd, findings: [] };
  let spec = options.spec;
  if (spec === undefined && files.spec) {
    const read = await readJobRecord(queue, files, 'spec');
    if (read.ok) spec = read.value;
  }
  if (files.gated) {
    // STATUS-1 for a gated job: held (HOLD-1), blocked (AFTER-1); otherwise
    // what it will be once a consumer opens its gate (GATE-3).
    const verdict = await gateVerdict(queue, spec, { cancel: false, release: files.release });
    if (verdict.kind === 'held') return { status: 'held', gen, findings: [] };
    // A dependency that can never be satisfied leaves it blocked until a consumer cancels it (AFTER-3).
    if (verdict.kind === 'blocked') return { status: 'blocked', gen, awaiting: verdict.awaiting, findings: [] };
    if (verdict.kind === 'newer' || (verdict.kind === 'cancel' && spec !== undefined)) return { status: 'blocked', gen, findings: [] };
  }
  return openStatus(queue, files, now, spec, end, options);
}

/**
 * deriveStatus where no record needs reading: no receipt, no claim
 * generation, no gate, and the spec at hand (or none in the directory).
 * Undefined otherwise: deriveStatus answers then. A consumer's walk judges
 * a queued job so, without a promise.
 */
export function deriveStatusNow(queue: Queue, files: JobFiles, options: StatusOptions = {}): JobStatusView | undefined {
  if (files.receipt || files.gen > 0 || files.gated || (options.spec === undefined && files.spec)) return undefined;
  if (files.cancel || files.cancelForce) return { status: 'cancelling', gen: files.gen, findings: [] };
  return openStatus(queue, files, (options.clock ?? systemClock).nowMs(), options.spec, undefined, options);
}

/** STATUS-1's last steps, for a job with no open claim and no receipt, whose gate (if any) is open: expired, delayed, retrying or queued. */
function openStatus(queue: Queue, files: JobFiles, now: number, spec: SpecRecord | undefined, end: EndRecord | undefined, options: StatusOptions): JobStatusView {
  const gen = files.gen;
  const withEnd = end === undefined ? {} : { end };
  if (spec !== undefined && spec.queue_deadline_ms !== null && files.execs.size === 0 && now > spec.created_ms + spec.queue_deadline_ms) {
    return { status: 'expired', gen, ...withEnd, findings: [] };
  }
  // DELAY-1 (1.1): not claimed before not_before_ms, judged by this reader's clock.
  const notBefore = spec?.not_before_ms ?? null;
  if (notBefore !== null && now < notBefore) return { status: 'delayed', gen, ...withEnd, notBeforeMs: notBefore, findings: [] };
  // RETRY-4: due by the wall clock, or by the retry delay watched on the monotonic clock.
  if (end !== undefined && end.retry_at_ms > now) {
    const dueInMs = options.leases?.retryDueInMs(`${queue.root}\0${files.id}\0${gen}`, end, now) ?? end.retry_at_ms - now;
    if (dueInMs > 0) return { status: 'retrying', gen, end, retryDueInMs: dueInMs, findings: [] };
  }
  return { status: 'queued', gen, ...withEnd, findings: [] };
}

/** Statuses in which a consumer may claim the job (CLAIM-1). */
export const CLAIMABLE: ReadonlySet<JobStatus> = new Set(['queued', 'cancelling', 'expired', 'orphaned']);

export type ExecutionState = 'none' | 'stopped' | 'running' | 'unknown';

/**
 * ID-8 for generation g: is its recorded execution proven stopped? A payload
 * execution (group null) lives in the owner's own process, so it is stopped
 * exactly when the owner is dead; a foreign group is stopped once its owner's
 * lease expired by LEASE-3 (LEASE-2 made the owner stop it, or its guardian
 * did within GUARDIAN_LIMIT, WORKER-2); a same-host group is judged
 * from the process table.
 */
export async function executionState(queue: Queue, files: JobFiles, gen: number, options: Pick<StatusOptions, 'clock' | 'leases'> = {}): Promise<ExecutionState> {
  if (!files.execs.has(gen)) return 'none';
  const exec = await readGenRecord(queue, files, 'exec', gen);
  if (!exec.ok) return 'unknown';
  const group = exec.value.group;
  const owner = async (): Promise<OwnerJudgement | undefined> => {
    if (!files.claims.includes(gen)) return undefined;
    const claim = await readGenRecord(queue, files, 'claim', gen);
    if (!claim.ok) return undefined;
    return judgeClaimOwner(queue, files, claim.value, (options.clock ?? systemClock).nowMs(), options.leases);
  };
  if (group === null) {
    const verdict = (await owner())?.verdict;
    return verdict === 'dead' ? 'stopped' : verdict === 'alive' ? 'running' : 'unknown';
  }
  const state = await groupState(group);
  if (state !== 'unknown') return state;
  if (!(await isLocal({ boot_id: group.boot_id, pid_ns: group.pid_ns }))) {
    // ID-8: a foreign group is stopped only by its owner's expired lease (LEASE-2, WORKER-2, LEASE-3).
    const judgement = await owner();
    return judgement?.verdict === 'dead' && judgement.basis === 'lease' ? 'stopped' : 'unknown';
  }
  return 'unknown';
}
