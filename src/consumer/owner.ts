/**
 * The consumer's owner of one claim generation: the generation writer of
 * src/model/generation.ts (CLAIM-7 guard, exec, state, end, receipt), plus
 * what a consumer does around it: it reports `ended` and `finished` events
 * and forgets the cached spec of a finished job.
 */
import { createHash } from 'node:crypto';
import { FsjobError } from '../base/errors.ts';
import { thenSoon, type Soon } from '../base/soon.ts';
import { OUTPUT_MAX } from '../base/constants.ts';
import { openBounded, type Dir, type SafeHandle } from '../fs/safefs.ts';
import { Generation, type EndReason, type ReceiptFields } from '../model/generation.ts';
import { outputName } from '../model/layout.ts';
import { headPart, type OutputKeep } from '../model/output-keep.ts';
import type { Queue } from '../model/queue.ts';
import type { EndRecord, ExecStatus, OutputSummary, ReceiptRecord, SpecRecord } from '../records/codec.ts';
import type { Context } from './context.ts';

/** Backoff of a generation given back after an infrastructure failure (seed 004: recovery limits). */
export const GIVE_BACK_DELAY = 2_000;

export class Ownership extends Generation {
  readonly ctx: Context;
  /** performance.now() just after the claim: where the guardian's first deadline counts from (LEASE-5). */
  readonly claimedReal = performance.now();

  constructor(ctx: Context, queue: Queue, id: string, gen: number, claimedMs: number, handle?: Dir) {
    super(queue, id, gen, claimedMs, ctx.clock, ctx.self, handle);
    this.ctx = ctx;
  }

  override async publishEnd(reason: EndReason, counted: boolean, retryDelayMs: number, status: ExecStatus | null): Promise<EndRecord> {
    const record = await super.publishEnd(reason, counted, retryDelayMs, status);
    this.ctx.emit({ type: 'ended', queue: this.queue.root, job_id: this.id, gen: this.gen, reason, retry_at_ms: record.retry_at_ms });
    return record;
  }

  override publishReceiptSoon(fields: ReceiptFields, spec?: SpecRecord): Soon<ReceiptRecord | undefined> {
    return thenSoon(super.publishReceiptSoon(fields, spec), (record) => this.finished(record));
  }

  /** The receipt is out: the spec cache forgets the job, and `finished` says so. */
  private finished(record: ReceiptRecord | undefined): ReceiptRecord | undefined {
    if (record === undefined) return undefined;
    this.ctx.specs.forget(this.queue, this.id);
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
 * RCPT-5 for a generation whose owner died (RECOV-1 step 3): the file as it
 * is, `bytes_total` null because nobody counted the stream. Whether bytes were
 * discarded is unknown too; `truncated` says whether the file holds exactly
 * the head part of the job's max_output_bytes (RCPT-8, EXEC-17: all of it
 * for head, half for head_tail, never for tail). Null when the file is missing or refused
 * (a symlink, a FIFO, too large).
 */
export async function deadOutputSummary(
  queue: Queue,
  id: string,
  stream: 'stdout' | 'stderr',
  gen: number,
  bound: number,
  keep: OutputKeep = 'head',
): Promise<OutputSummary | null> {
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
    // RCPT-8: a dead owner wrote at most the head part (EXEC-17); a full head part says bytes were likely dropped.
    const head = headPart(Math.min(bound, OUTPUT_MAX), keep);
    return { gen, bytes_total: null, bytes_kept: kept, truncated: head > 0 && kept === head, sha256: hash.digest('hex') };
  } finally {
    await handle.close().catch(() => undefined);
  }
}
