/**
 * One claim generation of a job (spec/claim.md, spec/records.md) and every
 * record its owner writes. Whoever claims a job uses this: a consumer
 * (src/consumer, through Ownership), `fsjob cancel` finishing a job nobody
 * holds (CANCEL-2), and recovery breaking a dead owner's claim (RECOV-1).
 *
 * - CLAIM-5: claiming generation g + 1 is one link() of claim.<g+1>.json;
 *   EXISTS means someone else claimed it first.
 * - CLAIM-7 / OWN-1: before each later write the owner checks that nobody
 *   claimed g + 1 (`guard`); a superseded owner gets SUPERSEDED and writes
 *   nothing more.
 * - Write-once records go through publishRecord with link (PUB-3), the
 *   state record with rename (PUB-4), output files through createExclusive
 *   (PUB-7). Nothing here writes a protocol file any other way.
 * - RCPT-3 then READY-2: the receipt is linked, then the ready entry goes.
 */
import { monotonicMs, type Clock } from '../base/clock.ts';
import { GEN_MAX, PROTOCOL_VERSION } from '../base/constants.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { catchSoon, thenSoon, type Soon } from '../base/soon.ts';
import { clipUtf8 } from '../base/text.ts';
import type { Dir, SafeHandle } from '../fs/safefs.ts';
import {
  encodeBuilt,
  type ClaimRecord,
  type EndRecord,
  type ExecRecord,
  type ExecStatus,
  type Group,
  type Identity,
  type OutputSummary,
  type ReceiptRecord,
  type SpecRecord,
  type StateRecord,
} from '../records/codec.ts';
import { genRecordName, outputName } from './layout.ts';
import { jobDir, type Queue } from './queue.ts';
import { removeReadyEntrySoon } from './ready.ts';

export type EndReason = EndRecord['reason'];

/** A generation's records are linked without a look first: their names are almost always free, and link() refuses a taken one (PUB-3). */
const FRESH = { lookFirst: false } as const;

/** The receipt members a decision fills in; the rest comes from the owner. */
export interface ReceiptFields {
  outcome: ReceiptRecord['outcome'];
  exit_code: number;
  reason?: ReceiptRecord['reason'];
  message?: string | null;
  attempts: number;
  status?: ExecStatus | null;
  started_ms?: number | null;
  stdout?: OutputSummary | null;
  stderr?: OutputSummary | null;
  result?: ReceiptRecord['result'];
}

/** Where a claim waits to be linked in its consumer's order (PublishOptions.commitTurn in src/fs/write.ts). */
export type CommitTurn = () => Promise<() => void>;

/** Who claims: the claim record's owner, worker and lease. */
export interface Claimant {
  owner: Identity;
  workerId: string | null;
  leaseMs: number;
}

/**
 * CLAIM-4/CLAIM-5: publish claim.<gen>.json by link, at `claimedMs`. True when
 * it is ours; false when another process linked it first (EXISTS). The caller
 * judged that generation gen - 1 may be broken (CLAIM-3) and that gen is
 * within GEN_MAX. `commitTurn`: where a consumer with several claims in
 * flight waits to link this one in its order (PublishOptions). The arguments
 * are publishClaimSoon's: queue, id, gen, claimant, claimedMs, dir, commitTurn.
 */
export async function publishClaim(...args: Parameters<typeof publishClaimSoon>): Promise<boolean> {
  return await publishClaimSoon(...args);
}

/** publishClaim, done before it returns where publish-now.ts's road is open (no commit turn, fsyncs inline), else its promise. */
export function publishClaimSoon(
  queue: Queue,
  id: string,
  gen: number,
  claimant: Claimant,
  claimedMs: number,
  dir: Dir = jobDir(queue, id),
  commitTurn?: CommitTurn,
): Soon<boolean> {
  if (!Number.isSafeInteger(gen) || gen < 1 || gen > GEN_MAX) {
    throw new FsjobError('USAGE', `generation ${gen} of job ${id} is outside 1..GEN_MAX (CLAIM-4)`, { jobId: id, clause: 'CLAIM-4' });
  }
  const claim: ClaimRecord = {
    fsjob: PROTOCOL_VERSION,
    type: 'claim',
    job_id: id,
    gen,
    owner: claimant.owner,
    worker_id: claimant.workerId,
    claimed_ms: claimedMs,
    lease_ms: claimant.leaseMs,
  };
  const bytes = encodeBuilt('claim', claim, { expectedJobId: id, expectedGen: gen }, claimant.owner);
  return catchSoon(
    // CLAIM-5: the commit point of the claim.
    () => thenSoon(dir.publishSoon(genRecordName('claim', gen), bytes, 'link', commitTurn === undefined ? FRESH : { ...FRESH, commitTurn }), () => true),
    (error) => {
      if (isFsjobError(error, 'EXISTS')) return false;
      throw error;
    },
  );
}

export class Generation {
  readonly queue: Queue;
  readonly id: string;
  readonly gen: number;
  readonly dir: string;
  /** The job directory's handle: every write of this generation goes through it. */
  readonly handle: Dir;
  readonly claimedMs: number;
  readonly clock: Clock;
  /** The identity a receipt names in `by`. */
  readonly by: Identity;
  private lost = false;
  /** The last instant this owner wrote, and the monotonic time it was written at (writeTimeMs). */
  private lastWrittenMs: number;
  private lastWrittenMono: number;

  /** `handle`: the job directory a visit holds (model/queue-dirs.ts), kept until close(); default: named by its path. */
  constructor(queue: Queue, id: string, gen: number, claimedMs: number, clock: Clock, by: Identity, handle: Dir = jobDir(queue, id)) {
    this.queue = queue;
    this.id = id;
    this.gen = gen;
    this.handle = handle;
    this.dir = this.handle.path;
    this.claimedMs = claimedMs;
    this.clock = clock;
    this.by = by;
    this.lastWrittenMs = claimedMs;
    this.lastWrittenMono = monotonicMs(clock) - Math.max(0, clock.nowMs() - claimedMs);
  }

  /**
   * The instant to write now: the wall clock, but never before the last
   * instant this owner wrote for the generation (claimed_ms first) plus the
   * monotonic time since. LEASE-4 measures elapsed time on the monotonic
   * clock: a wall clock that went back a day mid-run must not give a receipt
   * whose finished_ms is a day before its started_ms (issue 28 point 4), any
   * more than it may give a stale heartbeat. Every instant a generation
   * writes (recorded_ms, heartbeat_ms, ended_ms, started_ms, finished_ms)
   * comes from here.
   */
  writeTimeMs(atLeastMs = 0): number {
    const mono = monotonicMs(this.clock);
    const at = Math.max(this.clock.nowMs(), atLeastMs, this.lastWrittenMs + Math.round(mono - this.lastWrittenMono));
    this.lastWrittenMs = at;
    this.lastWrittenMono = mono;
    return at;
  }

  /** Ends the generation's visit of the job directory (a held handle's descriptor is closed). */
  close(): void {
    this.handle.close();
  }

  /** CLAIM-7: has someone claimed generation g + 1? Once true, always true. */
  async superseded(): Promise<boolean> {
    return this.supersededNow();
  }

  /** superseded(), synchronously: one lstat in the job directory (fs/read.ts, statNow), no promise. */
  supersededNow(): boolean {
    if (this.lost) return true;
    if (this.gen >= GEN_MAX) return false;
    if (this.handle.statNow(genRecordName('claim', this.gen + 1)) !== undefined) this.lost = true;
    return this.lost;
  }

  /**
   * Throws SUPERSEDED (CLAIM-7, OWN-1) when the claim is no longer ours. Synchronous: each write
   * below makes it just before its first call, with no turn of the event loop in between.
   */
  guard(): void {
    if (this.supersededNow()) {
      throw new FsjobError('SUPERSEDED', `claim ${this.gen} of job ${this.id} was superseded by claim ${this.gen + 1}; this owner stops and publishes nothing more (CLAIM-7, OWN-1)`, {
        jobId: this.id,
        path: this.path(genRecordName('claim', this.gen + 1)),
        clause: 'CLAIM-7',
      });
    }
  }

  path(name: string): string {
    return this.handle.entry(name);
  }

  private expect() {
    return { expectedJobId: this.id, expectedGen: this.gen };
  }

  /** EXEC-1: stdout.<g> and stderr.<g>, created exclusively. */
  async createOutputs(): Promise<{ stdout: SafeHandle; stderr: SafeHandle }> {
    this.guard();
    const stdout = await this.handle.create(outputName('stdout', this.gen));
    try {
      const stderr = await this.handle.create(outputName('stderr', this.gen));
      return { stdout, stderr };
    } catch (error) {
      await stdout.close().catch(() => undefined);
      throw error;
    }
  }

  /** EXEC-3: the commit point of the attempt. */
  async publishExec(attempt: number, group: Group | null): Promise<void> {
    await this.publishExecSoon(attempt, group);
  }

  /** publishExec, done before it returns where publish-now.ts's road is open (fs/write.ts, publishSoon), else its promise. */
  publishExecSoon(attempt: number, group: Group | null): Soon<unknown> {
    this.guard();
    const record: ExecRecord = {
      fsjob: PROTOCOL_VERSION,
      type: 'exec',
      job_id: this.id,
      gen: this.gen,
      attempt,
      group,
      recorded_ms: this.writeTimeMs(),
    };
    return this.handle.publishSoon(genRecordName('exec', this.gen), encodeBuilt('exec', record, this.expect(), group ?? undefined), 'link', FRESH);
  }

  /** LEASE-1: renew the lease by rename; returns the heartbeat time written (`atMs`, default now: LEASE-4). */
  async heartbeat(fields: Pick<StateRecord, 'phase' | 'attempt' | 'stdout_bytes' | 'stderr_bytes' | 'progress'>, atMs?: number): Promise<number> {
    this.guard();
    const now = this.writeTimeMs(atMs);
    const record: StateRecord = { fsjob: PROTOCOL_VERSION, type: 'state', job_id: this.id, gen: this.gen, heartbeat_ms: now, ...fields };
    await this.handle.publish(genRecordName('state', this.gen), encodeBuilt('state', record, this.expect()), 'rename');
    return now;
  }

  /** spec/records.md, the end record: generation g ends without a receipt; the job is queued again `retryDelayMs` after the end. */
  async publishEnd(reason: EndReason, counted: boolean, retryDelayMs: number, status: ExecStatus | null): Promise<EndRecord> {
    this.guard();
    const endedMs = this.writeTimeMs();
    const record: EndRecord = {
      fsjob: PROTOCOL_VERSION,
      type: 'end',
      job_id: this.id,
      gen: this.gen,
      reason,
      counted,
      retry_at_ms: endedMs + retryDelayMs,
      status,
      ended_ms: endedMs,
    };
    await this.handle.publish(genRecordName('end', this.gen), encodeBuilt('end', record, this.expect()), 'link', FRESH);
    return record;
  }

  /**
   * RCPT-3 then READY-2: publish the receipt by link and remove the ready
   * entry (a hint: failing to remove it is not an error, READY-3). Resolves
   * to the receipt, or undefined when one existed already (someone else
   * finished the job: ours is not published, RCPT-3).
   */
  async publishReceipt(fields: ReceiptFields, spec?: SpecRecord): Promise<ReceiptRecord | undefined> {
    return await this.publishReceiptSoon(fields, spec);
  }

  /**
   * publishReceipt, done before it returns where the link and the ready
   * entry's removal are (fs/write.ts, publishSoon and removeSoon), else its
   * promise. A subclass that does more once the receipt is out overrides this.
   */
  publishReceiptSoon(fields: ReceiptFields, spec?: SpecRecord): Soon<ReceiptRecord | undefined> {
    this.guard();
    const record: ReceiptRecord = {
      fsjob: PROTOCOL_VERSION,
      type: 'receipt',
      job_id: this.id,
      gen: this.gen,
      outcome: fields.outcome,
      exit_code: fields.exit_code,
      reason: fields.reason ?? null,
      message: fields.message === undefined || fields.message === null ? null : clipUtf8(fields.message),
      attempts: fields.attempts,
      status: fields.status ?? null,
      started_ms: fields.started_ms ?? null,
      finished_ms: this.writeTimeMs(fields.started_ms ?? 0), // never before the start it reports
      stdout: fields.stdout ?? null,
      stderr: fields.stderr ?? null,
      result: fields.result ?? null,
      by: this.by,
    };
    const bytes = encodeBuilt('receipt', record, { expectedJobId: this.id }, this.by);
    return catchSoon(
      () => thenSoon(this.handle.publishSoon('receipt.json', bytes, 'link', FRESH), () => this.readyGone(record, spec)),
      (error) => {
        if (isFsjobError(error, 'EXISTS')) return undefined;
        throw error;
      },
    );
  }

  /** READY-2 once the receipt is linked: the ready entry goes (a hint: failing to remove it is not an error, READY-3); then `record`. */
  private readyGone(record: ReceiptRecord, spec: SpecRecord | undefined): Soon<ReceiptRecord> {
    return catchSoon(
      () => thenSoon(removeReadyEntrySoon(this.queue, this.id, spec?.priority), () => record),
      () => record,
    );
  }
}
