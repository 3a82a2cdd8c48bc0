/**
 * The cancel record (CANCEL-1): published by link in the job's directory,
 * jobs/<id>/ or, for a gated job, jobs/<id>.gated/ (HOLD-3); a name that is
 * taken means the request stands already. A canceller publishes it, and so
 * does a consumer that finds a gated job that can never run (AFTER-3).
 */
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { PROTOCOL_VERSION } from '../base/constants.ts';
import type { Clock } from '../base/clock.ts';
import { publishRecord, type Dir } from '../fs/safefs.ts';
import { encodeRecord, readRecordIn, type CancelRecord } from '../records/codec.ts';
import type { Identity } from './identity.ts';
import type { Queue } from './queue.ts';

/** What the request says: force or graceful, why, by whom, when. */
export interface CancelRequest {
  force: boolean;
  reason: string | null;
  by: Identity;
  clock: Clock;
}

function encodeOrUsage(value: CancelRecord, jobId: string): Buffer {
  try {
    return encodeRecord('cancel', value, { expectedJobId: jobId });
  } catch (error) {
    if (isFsjobError(error, 'INVALID_RECORD') || isFsjobError(error, 'TOO_LARGE')) {
      throw new FsjobError('USAGE', `cannot write the cancel record for job ${jobId}: ${error.message}`, { jobId, clause: error.clause ?? 'REC-5', cause: error });
    }
    throw error;
  }
}

/**
 * The `reason` of the standing cancel request in a job's directory (the
 * force record's first), for the receipt's message; null when it gives none
 * or cannot be read (REC-9: the entry cancels whatever it holds).
 */
export async function cancelReason(dir: Dir, id: string, names: { cancel: boolean; cancelForce: boolean }): Promise<string | null> {
  for (const [present, name] of [[names.cancelForce, 'cancel-force.json'], [names.cancel, 'cancel.json']] as const) {
    if (!present) continue;
    const read = await readRecordIn(dir, name, 'cancel', { expectedJobId: id, allowMissing: true }).catch(() => undefined);
    if (read?.ok === true && read.value.reason !== null) return read.value.reason;
  }
  return null;
}

/**
 * CANCEL-1: publish cancel.json (or cancel-force.json) by link in `dir`, the
 * job's directory. Resolves to true when this call published it, false when
 * the request stood already.
 */
export async function publishCancelRequest(queue: Queue, dir: string, id: string, request: CancelRequest): Promise<boolean> {
  const value: CancelRecord = {
    fsjob: PROTOCOL_VERSION,
    type: 'cancel',
    job_id: id,
    force: request.force,
    requested_ms: request.clock.nowMs(),
    by: request.by,
    reason: request.reason,
  };
  try {
    await publishRecord(dir, request.force ? 'cancel-force.json' : 'cancel.json', encodeOrUsage(value, id), 'link', queue.fsOptions);
    return true;
  } catch (error) {
    if (!isFsjobError(error, 'EXISTS')) throw error;
    return false;
  }
}
