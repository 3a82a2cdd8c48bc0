/**
 * Cancellation from the producer's side (spec/control.md).
 *
 * CANCEL-1: the request is a write-once record, published by link; if it
 * stands already, asking again succeeds. CANCEL-2: a job without an open
 * claim is finished at once: claim the next generation by link (CLAIM-5),
 * then publish a `cancelled` receipt by link (RCPT-3). Both links are commit
 * points: if the claim is lost, the process that won it is the owner and sees
 * the request (CLAIM-6.2); a running job's owner acts on it (CANCEL-3).
 */
import { checkBoolean, checkMethods, checkNullableString, checkOptionsObject } from '../base/option-checks.ts';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { Generation, publishClaim } from '../model/generation.ts';
import { attemptsUsed, listJob, readJobRecord, type JobFiles } from '../model/job.ts';
import { publishCancelRequest } from '../model/cancel-request.ts';
import { openGate } from '../model/gates.ts';
import type { ReceiptRecord } from '../records/codec.ts';
import { ATTEMPTS_MAX, GEN_MAX, LEASE_DEFAULT, OUTCOME_EXIT } from '../base/constants.ts';
import { selfIdentity } from '../model/identity.ts';
import { assertQueue, type Queue } from '../model/queue.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import { findJob, readSpec } from './jobs.ts';

/** Why CLAIM-6 step 1 rejects a job whose spec is not valid (missing, a hazard, invalid, another major). */
async function specRejection(queue: Queue, files: JobFiles): Promise<{ reason: 'invalid_spec' | 'unsupported_version'; message: string }> {
  if (!files.spec) return { reason: 'invalid_spec', message: 'the job directory has no spec.json (CLAIM-6)' };
  const read = await readJobRecord(queue, files, 'spec');
  const first = read.ok ? undefined : read.findings[0];
  return {
    reason: first?.code === 'RECORD_VERSION' ? 'unsupported_version' : 'invalid_spec',
    message: `spec.json is invalid${first === undefined ? '' : ` (${first.clause}): ${first.message}`} (CLAIM-6, CLAIM-10)`,
  };
}

/** Options of `cancel` (spec/control.md). */
export interface CancelOptions {
  /** cancel-force.json instead of cancel.json: the owner kills at once (CANCEL-3). @default false */
  force?: boolean;
  /** Why, for people (at most 1024 bytes); written in the cancel record and the receipt's message. @default null */
  reason?: string | null;
  /** @default systemClock */
  clock?: Clock;
}

/** What `cancel` did: which request record stands and who acts on it next. */
export interface CancelResult {
  id: string;
  /** The request record that now stands. */
  record: 'cancel.json' | 'cancel-force.json';
  /** False when the same request stood already (still a success, CANCEL-1). */
  published: boolean;
  /**
   * What happens next: `finished` (this call published the receipt,
   * CANCEL-2), `owner` (a claim is open: its owner, or whoever recovers it,
   * acts on the request), `claimed-elsewhere` (another process claimed the
   * job first and will see the request, CLAIM-6.2), `finished-elsewhere`
   * (a receipt appeared meanwhile).
   */
  next: 'finished' | 'owner' | 'claimed-elsewhere' | 'finished-elsewhere';
  /** The receipt this call published, when `next` is `finished`. */
  receipt: ReceiptRecord | null;
}

function finishedRefusal(id: string, receipt: ReceiptRecord | undefined, path: string): FsjobError {
  const how = receipt === undefined ? 'it has a receipt.json (unreadable: fsjob validate shows why)' : `${receipt.outcome}, exit code ${receipt.exit_code}`;
  return new FsjobError('FINISHED', `job ${id} already finished (${how}); a finished job cannot be cancelled (CANCEL-1)`, {
    jobId: id,
    path,
    clause: 'CANCEL-1',
  });
}

async function refuseFinished(queue: Queue, files: JobFiles): Promise<void> {
  if (!files.receipt) return;
  const receipt = await readJobRecord(queue, files, 'receipt');
  throw finishedRefusal(files.id, receipt.ok ? receipt.value : undefined, queue.paths.jobFile(files.id, 'receipt.json'));
}

/**
 * Ask for a job to be cancelled (CANCEL-1) and, when no claim is open,
 * finish it at once with a `cancelled` receipt (CANCEL-2).
 *
 * Throws NOT_FOUND for an unknown job, FINISHED (naming the outcome) for a
 * job that already has a receipt, USAGE for a reason over 1024 bytes.
 */
export async function cancel(queue: Queue, id: string, options: CancelOptions = {}): Promise<CancelResult> {
  assertQueue(queue, 'cancel');
  checkOptionsObject(options, 'cancel');
  checkBoolean(options, 'cancel', 'force');
  checkNullableString(options, 'cancel', 'reason');
  checkMethods(options, 'cancel', 'clock', ['nowMs', 'sleep']);
  const clock = options.clock ?? systemClock;
  const force = options.force ?? false;
  const record: CancelResult['record'] = force ? 'cancel-force.json' : 'cancel.json';
  let files = await findJob(queue, id);
  await refuseFinished(queue, files);

  const me = await selfIdentity();
  const request = { force, reason: options.reason ?? null, by: me, clock };
  // CANCEL-1 (HOLD-3: in jobs/<id>.gated/ for a gated job); false: the request already stands.
  let published: boolean;
  try {
    published = await publishCancelRequest(queue, files.dir, id, request);
  } catch (error) {
    // The gate opened between the look and the link: the job is at jobs/<id> now (GATE-4).
    if (!files.gated || !isFsjobError(error, 'NOT_FOUND')) throw error;
    files = await findJob(queue, id);
    await refuseFinished(queue, files);
    published = await publishCancelRequest(queue, files.dir, id, request);
  }
  const result = (next: CancelResult['next'], receipt: ReceiptRecord | null = null): CancelResult => ({ id, record, published, next, receipt });
  // HOLD-3: a cancel entry lets the gate open (GATE-3); the job is then decided as any job is.
  if (files.gated) await openGate(queue, id, (await readSpec(queue, files))?.priority ?? 0);

  // CANCEL-2. Look again: the job may have been claimed or finished meanwhile.
  files = await listJob(queue, id);
  if (files.receipt) return result('finished-elsewhere');
  const gen = files.gen;
  if (gen > 0 && !files.ends.has(gen)) return result('owner');
  // CLAIM-4: no generation past GEN_MAX; `recover` reports such a job.
  if (gen + 1 > GEN_MAX) return result('owner');

  const next = gen + 1;
  const claimedMs = clock.nowMs();
  // CLAIM-5: the link is the commit point of the claim.
  if (!(await publishClaim(queue, id, next, { owner: me, workerId: null, leaseMs: LEASE_DEFAULT }, claimedMs))) return result('claimed-elsewhere');
  const owner = new Generation(queue, id, next, claimedMs, clock, me);

  // We own generation `next`. CLAIM-6.0: a superseded owner may have finished
  // the job after our listing; CLAIM-7: nobody may have taken next + 1 (the
  // listing, then the owner's guard before the receipt).
  files = await listJob(queue, id);
  if (files.receipt) return result('finished-elsewhere');
  if (files.claims.includes(next + 1)) return result('claimed-elsewhere');
  const spec = await readSpec(queue, files);
  const reason = options.reason ?? null;
  const attempts = Math.min(await attemptsUsed(queue, files), ATTEMPTS_MAX);
  const when = attempts === 0 ? 'cancelled before it ran' : `cancelled while waiting to be retried, after ${attempts} attempt${attempts === 1 ? '' : 's'}`;
  let receipt: ReceiptRecord | undefined;
  try {
    // RCPT-3: the link is the commit point; the job is finished. READY-2 follows.
    // This generation recorded no execution, so the receipt reports none
    // (RCPT-5); earlier attempts' output stays in their stdout.<g> files.
    // CLAIM-10: the canceller decides as any claimer does, so an invalid spec is
    // rejected (CLAIM-6 step 1) before the cancel counts (step 2).
    const invalid = spec === undefined ? await specRejection(queue, files) : undefined;
    receipt = await owner.publishReceipt(
      invalid === undefined
        ? { outcome: 'cancelled', exit_code: OUTCOME_EXIT.cancelled, message: `${when} (CANCEL-2)${reason === null ? '' : `: ${reason}`}`, attempts }
        : { outcome: 'rejected', exit_code: OUTCOME_EXIT.rejected, reason: invalid.reason, message: invalid.message, attempts },
      spec,
    );
  } catch (error) {
    if (isFsjobError(error, 'SUPERSEDED')) return result('claimed-elsewhere');
    throw error;
  }
  if (receipt === undefined) return result('finished-elsewhere');
  return result('finished', receipt);
}
