/**
 * Pausing a queue's consumption (spec/records.md, PAUSE-1). The pause is one
 * root entry, `pause.json`: while an entry of any kind has that name no
 * consumer claims a job (its existence decides, as REC-9 says for job
 * records; the record says who paused the queue, when and why). Pausing
 * publishes it by link, so a second pause finds the name taken and changes
 * nothing; resuming removes it, the only removal PUB-10 allows for it.
 */
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { checkMethods, checkOptionsObject, describe } from '../base/option-checks.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import { PROTOCOL_VERSION } from '../base/constants.ts';
import { entryPresent, entryPresentNow } from '../fs/read.ts';
import { publishRecord, removeTree } from '../fs/write.ts';
import { encodeRecord, readRecord, type PauseRecord } from '../records/codec.ts';
import type { Finding } from '../records/findings.ts';
import { selfIdentity } from './identity.ts';
import { PAUSE_RECORD } from './layout.ts';
import { assertQueue, type Queue } from './queue.ts';

/** Whether a queue is paused (PAUSE-1), and by which record. */
export type PauseState =
  | { paused: false }
  /** `record` is null when the entry is not a valid pause record: the queue is paused all the same. */
  | { paused: true; record: PauseRecord | null; findings: Finding[] };

/** PAUSE-1: one lstat of the root's pause.json (never followed); the record is read only when it is there. */
export async function pauseState(queue: Queue): Promise<PauseState> {
  assertQueue(queue, 'pauseState');
  const file = queue.paths.pauseRecord();
  if (!(await entryPresent(file, queue.fsOptions))) return { paused: false };
  try {
    const read = await readRecord(file, 'pause', { ...queue.fsOptions, allowMissing: true });
    if (read === undefined) return { paused: false }; // resumed between the lstat and the read
    return read.ok ? { paused: true, record: read.value, findings: [] } : { paused: true, record: null, findings: read.findings };
  } catch (error) {
    // A symlink, a FIFO, a directory at the name: it still pauses (REC-9); nothing is followed or opened.
    if (isFsjobError(error) && error.code !== 'IO') return { paused: true, record: null, findings: [] };
    throw error;
  }
}

/** Whether the queue is paused now: the cheap check a consumer makes before every scan. */
export function isPaused(queue: Queue): boolean {
  // Synchronous: one lstat, before every scan of a consumer, needs no promise.
  return entryPresentNow(queue.paths.pauseRecord(), queue.fsOptions);
}

/** Options of `pauseQueue`. */
export interface PauseOptions {
  /** Why, for people (at most 1024 bytes). @default null */
  reason?: string | null;
  /** @default systemClock */
  clock?: Clock;
}

/**
 * Publishes pause.json (PUB-1..PUB-6). Resolves to the record that stands
 * and whether this call published it (false: the queue was paused already,
 * by the record returned, or by an entry that is not a valid record: null).
 */
export async function pauseQueue(queue: Queue, options: PauseOptions = {}): Promise<{ published: boolean; record: PauseRecord | null }> {
  assertQueue(queue, 'pauseQueue');
  checkOptionsObject(options, 'pauseQueue');
  checkMethods(options, 'pauseQueue', 'clock', ['nowMs', 'sleep']);
  if (options.reason !== undefined && options.reason !== null && typeof options.reason !== 'string') {
    throw new FsjobError('USAGE', `pauseQueue: option reason must be a string or null, not ${describe(options.reason)}`, { field: '/reason' });
  }
  const record: PauseRecord = {
    fsjob: PROTOCOL_VERSION,
    type: 'pause',
    paused_ms: (options.clock ?? systemClock).nowMs(),
    by: await selfIdentity(),
    reason: options.reason ?? null,
  };
  let bytes: Buffer;
  try {
    bytes = encodeRecord('pause', record);
  } catch (error) {
    if (isFsjobError(error, 'INVALID_RECORD') || isFsjobError(error, 'TOO_LARGE')) {
      throw new FsjobError('USAGE', `cannot write the pause record: ${error.message}`, { clause: error.clause ?? 'REC-5', cause: error });
    }
    throw error;
  }
  try {
    await publishRecord(queue.root, PAUSE_RECORD, bytes, 'link', queue.fsOptions);
    return { published: true, record };
  } catch (error) {
    // The name is taken: by a record (EXISTS), or by an entry refused before the link (a FIFO, a
    // directory, a symlink: SEC-2, SEC-3) that pauses the queue all the same (PAUSE-1): paused already.
    const taken = isFsjobError(error, 'EXISTS') || (isFsjobError(error) && error.code !== 'IO' && (await entryPresent(queue.paths.pauseRecord(), queue.fsOptions)));
    if (!taken) throw error;
    const state = await pauseState(queue);
    return { published: false, record: state.paused ? state.record : null };
  }
}

/** Removes pause.json (PUB-10): consumers claim again at their next scan. Resolves to whether the queue was paused. */
export async function resumeQueue(queue: Queue): Promise<boolean> {
  assertQueue(queue, 'resumeQueue');
  return removeTree(queue.paths.pauseRecord(), queue.fsOptions);
}
