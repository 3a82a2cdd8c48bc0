/**
 * The owner of one claim generation and every write it makes.
 *
 * Each write first checks that the claim is still ours (CLAIM-7: no
 * `claim.<g+1>.json`); a superseded owner gets SUPERSEDED and writes nothing
 * more (OWN-1). Write-once records go through publishRecord with link
 * (PUB-3), the state record with rename (PUB-4), output files through
 * createExclusive (PUB-7). Nothing here writes a protocol file any other way.
 */
import { createHash } from 'node:crypto';
import type { SafeHandle } from '../fs/safefs.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { GEN_MAX, OUTPUT_MAX, PROTOCOL_VERSION } from '../base/constants.ts';
import { genRecordName, outputName, parseReadyEntry, readyEntryName } from '../model/layout.ts';
import type { Queue } from '../model/queue.ts';
import {
  encodeRecord,
  type EndRecord,
  type ExecRecord,
  type ExecStatus,
  type Group,
  type OutputSummary,
  type ReceiptRecord,
  type SpecRecord,
  type StateRecord,
} from '../records/codec.ts';
import { createExclusive, listDir, openBounded, publishRecord, removeTree, statEntry } from '../fs/safefs.ts';
import type { Context } from './context.ts';

export type EndReason = EndRecord['reason'];

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

/** Backoff of a generation given back after an infrastructure failure (seed 004: recovery limits). */
export const GIVE_BACK_DELAY = 2_000;

const MESSAGE_MAX_BYTES = 1024;

/** Cut a text to at most `max` bytes of UTF-8 without splitting a character. */
export function clipUtf8(text: string, max = MESSAGE_MAX_BYTES): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let end = max;
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

export class Ownership {
  readonly ctx: Context;
  readonly queue: Queue;
  readonly id: string;
  readonly gen: number;
  readonly dir: string;
  readonly claimedMs: number;
  /** performance.now() just after the claim: where the guardian's first deadline counts from (LEASE-5). */
  readonly claimedReal = performance.now();
  private lost = false;

  constructor(ctx: Context, queue: Queue, id: string, gen: number, claimedMs: number) {
    this.ctx = ctx;
    this.queue = queue;
    this.id = id;
    this.gen = gen;
    this.dir = queue.paths.job(id);
    this.claimedMs = claimedMs;
  }

  /** CLAIM-7: has someone claimed generation g + 1? Once true, always true. */
  async superseded(): Promise<boolean> {
    if (this.lost) return true;
    if (this.gen >= GEN_MAX) return false;
    const next = await statEntry(this.path(genRecordName('claim', this.gen + 1)), this.queue.fsOptions);
    if (next !== undefined) this.lost = true;
    return this.lost;
  }

  /** Throws SUPERSEDED (CLAIM-7, OWN-1) when the claim is no longer ours. */
  async guard(): Promise<void> {
    if (await this.superseded()) {
      throw new FsjobError('SUPERSEDED', `claim ${this.gen} of job ${this.id} was superseded by claim ${this.gen + 1}; this owner stops and publishes nothing more (CLAIM-7, OWN-1)`, {
        jobId: this.id,
        path: this.path(genRecordName('claim', this.gen + 1)),
        clause: 'CLAIM-7',
      });
    }
  }

  path(name: string): string {
    return this.queue.paths.jobFile(this.id, name);
  }

  private expect() {
    return { expectedJobId: this.id, expectedGen: this.gen };
  }

  /** EXEC-1: stdout.<g> and stderr.<g>, created exclusively. */
  async createOutputs(): Promise<{ stdout: SafeHandle; stderr: SafeHandle }> {
    await this.guard();
    const stdout = await createExclusive(this.dir, outputName('stdout', this.gen), undefined, this.queue.fsOptions);
    try {
      const stderr = await createExclusive(this.dir, outputName('stderr', this.gen), undefined, this.queue.fsOptions);
      return { stdout, stderr };
    } catch (error) {
      await stdout.close().catch(() => undefined);
      throw error;
    }
  }

  /** EXEC-3: the commit point of the attempt. */
  async publishExec(attempt: number, group: Group | null): Promise<void> {
    await this.guard();
    const record: ExecRecord = {
      fsjob: PROTOCOL_VERSION,
      type: 'exec',
      job_id: this.id,
      gen: this.gen,
      attempt,
      group,
      recorded_ms: this.ctx.clock.nowMs(),
    };
    await publishRecord(this.dir, genRecordName('exec', this.gen), encodeRecord('exec', record, this.expect()), 'link', this.queue.fsOptions);
  }

  /** LEASE-1: renew the lease by rename; returns the heartbeat time written (`atMs`, default now: LEASE-4). */
  async heartbeat(fields: Pick<StateRecord, 'phase' | 'attempt' | 'stdout_bytes' | 'stderr_bytes' | 'progress'>, atMs?: number): Promise<number> {
    await this.guard();
    const now = atMs ?? this.ctx.clock.nowMs();
    const record: StateRecord = { fsjob: PROTOCOL_VERSION, type: 'state', job_id: this.id, gen: this.gen, heartbeat_ms: now, ...fields };
    await publishRecord(this.dir, genRecordName('state', this.gen), encodeRecord('state', record, this.expect()), 'rename', this.queue.fsOptions);
    return now;
  }

  /** Section 5.6: generation g ends without a receipt; the job is queued again `retryDelayMs` after the end. */
  async publishEnd(reason: EndReason, counted: boolean, retryDelayMs: number, status: ExecStatus | null): Promise<EndRecord> {
    await this.guard();
    const endedMs = this.ctx.clock.nowMs();
    const retryAtMs = endedMs + retryDelayMs;
    const record: EndRecord = {
      fsjob: PROTOCOL_VERSION,
      type: 'end',
      job_id: this.id,
      gen: this.gen,
      reason,
      counted,
      retry_at_ms: retryAtMs,
      status,
      ended_ms: endedMs,
    };
    await publishRecord(this.dir, genRecordName('end', this.gen), encodeRecord('end', record, this.expect()), 'link', this.queue.fsOptions);
    this.ctx.emit({ type: 'ended', queue: this.queue.root, job_id: this.id, gen: this.gen, reason, retry_at_ms: retryAtMs });
    return record;
  }

  /**
   * RCPT-3 then READY-2: publish the receipt by link and remove the ready
   * entry. Resolves to the receipt, or undefined when one existed already
   * (someone else finished the job: ours is not published, RCPT-3).
   */
  async publishReceipt(fields: ReceiptFields, spec?: SpecRecord): Promise<ReceiptRecord | undefined> {
    await this.guard();
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
      finished_ms: this.ctx.clock.nowMs(),
      stdout: fields.stdout ?? null,
      stderr: fields.stderr ?? null,
      result: fields.result ?? null,
      by: this.ctx.self,
    };
    try {
      await publishRecord(this.dir, 'receipt.json', encodeRecord('receipt', record, { expectedJobId: this.id }), 'link', this.queue.fsOptions);
    } catch (error) {
      if (isFsjobError(error, 'EXISTS')) return undefined;
      throw error;
    }
    this.ctx.specs.forget(this.queue, this.id);
    await removeReadyEntry(this.queue, this.id, spec?.priority).catch(() => undefined);
    this.ctx.emit({
      type: 'finished',
      queue: this.queue.root,
      job_id: this.id,
      gen: this.gen,
      outcome: record.outcome,
      exit_code: record.exit_code,
      reason: record.reason,
      attempts: record.attempts,
    });
    return record;
  }
}

/**
 * READY-2/READY-3: remove a job's ready entry. With the priority the name is
 * known; without it (an invalid spec) ready/ is listed for the id.
 */
export async function removeReadyEntry(queue: Queue, id: string, priority?: number): Promise<void> {
  if (priority !== undefined) {
    await removeTree(queue.paths.ready(priority, id), queue.fsOptions);
    return;
  }
  for (const entry of await listDir(queue.paths.dir('ready'), queue.fsOptions)) {
    if (parseReadyEntry(entry.name)?.id === id) await removeTree(`${queue.paths.dir('ready')}/${entry.name}`, queue.fsOptions);
  }
}

export function readyName(spec: SpecRecord | undefined, id: string): string {
  return readyEntryName(spec?.priority ?? 0, id);
}

/**
 * RCPT-5 for a generation whose owner died (RECOV-1 step 3): the file as it
 * is, `bytes_total` null because nobody counted the stream. Whether bytes were
 * discarded is unknown too; `truncated` says whether the file reached the
 * job's max_output_bytes (RECOV-1). Null when the file is missing or refused
 * (a symlink, a FIFO, too large).
 */
export async function deadOutputSummary(queue: Queue, id: string, stream: 'stdout' | 'stderr', gen: number, bound: number): Promise<OutputSummary | null> {
  let opened: { handle: SafeHandle; size: number };
  try {
    opened = await openBounded(queue.paths.jobFile(id, outputName(stream, gen)), OUTPUT_MAX, queue.fsOptions);
  } catch (error) {
    if (error instanceof FsjobError && error.code !== 'IO') return null;
    throw error;
  }
  const { handle } = opened;
  try {
    const hash = createHash('sha256');
    let kept = 0;
    const chunk = Buffer.allocUnsafe(65_536);
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, kept);
      if (bytesRead === 0 || kept + bytesRead > OUTPUT_MAX) break;
      hash.update(chunk.subarray(0, bytesRead));
      kept += bytesRead;
    }
    // RCPT-2: the receipt describes the file, so the file is made durable first.
    await handle.sync();
    return { gen, bytes_total: null, bytes_kept: kept, truncated: kept >= Math.min(bound, OUTPUT_MAX), sha256: hash.digest('hex') };
  } finally {
    await handle.close().catch(() => undefined);
  }
}
