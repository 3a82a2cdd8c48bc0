/**
 * Waiting on many jobs at once (`fsjob wait --all`, `--lane`, `--label`,
 * ids read from standard input): each receipt is reported as its job
 * finishes, and the wait ends when every job has one.
 *
 * One watch on ready/ wakes the waiter, whatever the number of jobs: a
 * consumer removes a job's ready entry after publishing its receipt
 * (READY-2), so the event comes after the receipt exists. Nothing is trusted
 * from an event, and a poll covers filesystems without events. Each wake-up
 * lists ready/ and reads the receipt of each pending job whose entry is gone
 * (a listing costs about 1 us per entry, a receipt read about 20 us): an
 * entry that is there means no receipt yet, but for a crash between the
 * receipt and READY-2, so every FULL_SWEEP_MS a sweep reads every pending
 * receipt whatever ready/ says. Wake-ups are spaced by what the last one
 * cost (SWEEP_JOBS_PER_MS, LIST_ENTRIES_PER_MS): a wait on 100,000 queued
 * jobs lists every 2.5 s and sweeps every minute, one on 100 jobs at once.
 */
import { FsjobError } from '../base/errors.ts';
import { assertJobId, readyEntryId } from '../model/layout.ts';
import { assertQueue, locateJob, type Queue } from '../model/queue.ts';
import type { ReceiptRecord } from '../records/codec.ts';
import { systemClock } from '../base/clock.ts';
import { noticeUnserved } from './service-notice.ts';
import { checkWaitOptions, receiptOf, throwIfAborted, Waker, WAIT_POLL_MS, type WaitOptions } from './watch.ts';
import { checkFunction, checkInteger } from '../base/option-checks.ts';

/** Pending jobs looked at per millisecond between two sweeps: the waiter's share of a core stays small however many jobs it waits for. */
const SWEEP_JOBS_PER_MS = 20;
/** Ready entries listed per millisecond between two wake-ups. */
const LIST_ENTRIES_PER_MS = 40;
/** The longest gap between two sweeps. */
const SWEEP_GAP_MAX_MS = 5000;
/** How often every pending receipt is read, whatever ready/ says: a receipt whose entry a crash left (READY-2 undone) is found within this; READY-3 removes such entries when a consumer starts or recover runs. */
export const FULL_SWEEP_MS = 60_000;

/** Options of `waitForMany`: those of `waitFor`, and where each receipt goes as its job finishes. */
export interface ManyWaitOptions extends WaitOptions {
  /**
   * Called once per job with its receipt, as the job finishes (jobs
   * finished already first, in the order of `ids`; then in the order they
   * finish, those found in one look in the order of `ids`).
   */
  onReceipt?: (receipt: ReceiptRecord) => void;
  /** How often every pending receipt is read whatever ready/ says (see FULL_SWEEP_MS). @default FULL_SWEEP_MS */
  fullSweepMs?: number;
}

/** What `waitForMany` resolves to. */
export interface ManyWaitResult {
  /** One receipt per job, in the order of `ids`. */
  receipts: ReceiptRecord[];
  /** `summaryExitCode(receipts)`. */
  exitCode: number;
}

/**
 * The exit status that sums up many receipts: 0 when every job succeeded
 * (exit code 0, EXEC-10; also when there is no job), else the exit code of
 * the first job, in the order given, that did not. Finish order never
 * enters: the same jobs give the same status however they raced.
 */
export function summaryExitCode(receipts: readonly ReceiptRecord[]): number {
  return receipts.find((receipt) => receipt.exit_code !== 0)?.exit_code ?? 0;
}

async function assertPublished(queue: Queue, id: string): Promise<void> {
  assertJobId(id);
  const dir = queue.paths.job(id);
  // GATE-4: a held or blocked job is at jobs/<id>.gated until its gate opens, and may open between two looks.
  if ((await locateJob(queue, id)) !== 'missing') return;
  throw new FsjobError('NOT_FOUND', `no job ${id} in ${queue.root} (it was never published there, or gc removed it after it finished); fsjob status lists the jobs`, { path: dir, jobId: id });
}

function timedOut(queue: Queue, pending: ReadonlySet<string>, total: number, timeoutMs: number): FsjobError {
  const ids = [...pending];
  const shown = ids.slice(0, 3).join(', ') + (ids.length > 3 ? `, and ${ids.length - 3} more` : '');
  const which = total === 1 ? `job ${shown} has` : `${ids.length} of ${total} jobs have`;
  // The message names a few; jobIds names every one, so a script can go on with exactly those (--json: job_ids).
  return new FsjobError('TIMEOUT', `${which} no receipt yet after ${timeoutMs} ms of waiting${total === 1 ? '' : ` (${shown})`}; still unfinished (fsjob status ID says where ${total === 1 ? 'it' : 'each'} is)`, {
    jobId: ids[0] as string,
    jobIds: ids,
    path: queue.paths.job(ids[0] as string),
  });
}

/** The ids ready/ names (READY-1), or undefined when it cannot be listed (the sweep then reads every pending receipt). */
async function indexedIds(queue: Queue): Promise<Set<string> | undefined> {
  let entries;
  try {
    entries = await queue.dirs.ready.list();
  } catch (error) {
    if (error instanceof FsjobError) return undefined;
    throw error;
  }
  const ids = new Set<string>();
  for (const entry of entries) {
    const id = readyEntryId(entry.name);
    if (id !== undefined) ids.add(id);
  }
  return ids;
}

/**
 * Waits until every job of `ids` has a receipt (RCPT-3) and resolves to the
 * receipts in the order of `ids` and their summary exit code. An id named
 * twice counts once. Throws NOT_FOUND for an id that is not a job of the
 * queue (before waiting), TIMEOUT when `timeoutMs` elapses first (the
 * receipts that came before went to `onReceipt`; its `jobIds` are every job
 * still unfinished, in the order of `ids`), INVALID_RECORD for an
 * invalid receipt, NOT_FOUND when gc removes a job being waited on, and the
 * abort reason when `signal` aborts. While a job waits with no live worker
 * serving the queue, says so once (`unservedNotice`, as `waitFor`).
 */
export async function waitForMany(queue: Queue, ids: readonly string[], options: ManyWaitOptions = {}): Promise<ManyWaitResult> {
  assertQueue(queue, 'waitForMany');
  checkWaitOptions(options, 'waitForMany');
  checkFunction(options, 'waitForMany', 'onReceipt');
  checkInteger(options, 'waitForMany', 'fullSweepMs', 1, Number.MAX_SAFE_INTEGER);
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) throw new FsjobError('USAGE', 'waitForMany takes an array of job ids');
  const clock = options.clock ?? systemClock;
  const pollMs = options.pollMs ?? WAIT_POLL_MS;
  const order = [...new Set(ids)];
  for (const id of order) await assertPublished(queue, id);
  const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : clock.nowMs() + options.timeoutMs;
  const pending = new Set(order);
  const got = new Map<string, ReceiptRecord>();
  // Watch before the first look, so a receipt published in between wakes us.
  const waker = new Waker(queue.paths.dir('ready'));
  const notice = options.unservedNotice ?? ((line: string) => void process.stderr.write(line));
  const stopNotice = notice === false ? undefined : noticeUnserved(queue, pending, { stderr: notice });
  const fullSweepMs = options.fullSweepMs ?? FULL_SWEEP_MS;
  let lastFull = Number.NEGATIVE_INFINITY;
  try {
    for (;;) {
      throwIfAborted(options.signal);
      // Monotonic: a wall clock that goes back must not put off the full sweep.
      const indexed = performance.now() - lastFull < fullSweepMs ? await indexedIds(queue) : undefined;
      if (indexed === undefined) lastFull = performance.now();
      let read = 0;
      for (const id of pending) {
        if (indexed?.has(id) === true) continue;
        read += 1;
        const receipt = await receiptOf(queue, id);
        if (receipt === undefined) continue;
        pending.delete(id);
        got.set(id, receipt);
        options.onReceipt?.(receipt);
      }
      if (pending.size === 0) break;
      const left = deadline - clock.nowMs();
      if (left <= 0) throw timedOut(queue, pending, order.length, options.timeoutMs ?? 0);
      const gap = Math.min(SWEEP_GAP_MAX_MS, Math.max(read / SWEEP_JOBS_PER_MS, (indexed?.size ?? 0) / LIST_ENTRIES_PER_MS));
      await waker.sleep(Math.min(Math.max(pollMs, gap), left), options.signal, gap);
    }
  } finally {
    stopNotice?.();
    waker.close();
  }
  const receipts = order.map((id) => got.get(id) as ReceiptRecord);
  return { receipts, exitCode: summaryExitCode(receipts) };
}
