/**
 * Small shared steps of the producer's operations on one published job:
 * find it, read its spec.
 */
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { assertJobId } from '../model/layout.ts';
import { listJob, readJobRecord, type JobFiles } from '../model/job.ts';
import type { ReceiptRecord, SpecRecord } from '../records/codec.ts';
import type { Finding } from '../records/findings.ts';
import type { Queue } from '../model/queue.ts';

/** Lists jobs/<id>/ (LAYOUT-5); NOT_FOUND with the job id when there is no such job. */
export async function findJob(queue: Queue, id: string): Promise<JobFiles> {
  assertJobId(id);
  try {
    return await listJob(queue, id);
  } catch (error) {
    if (isFsjobError(error, 'NOT_FOUND')) {
      throw new FsjobError('NOT_FOUND', `no job ${id} in ${queue.root} (it was never published there, or gc removed it after it finished); fsjob status lists the jobs`, {
        path: queue.paths.job(id),
        jobId: id,
        cause: error,
      });
    }
    throw error;
  }
}

/** The job's spec when spec.json is a valid record (REC-4), else undefined. */
export async function readSpec(queue: Queue, files: JobFiles): Promise<SpecRecord | undefined> {
  if (!files.spec) return undefined;
  const read = await readJobRecord(queue, files, 'spec');
  return read.ok ? read.value : undefined;
}

/** A receipt.json that exists but is invalid (RCPT-6: it will never change, so the job is damaged, not finished). */
export function invalidReceipt(file: string, id: string, findings: readonly Finding[]): FsjobError {
  const first = findings[0];
  return new FsjobError('INVALID_RECORD', `${file} exists but is not a valid receipt (${first?.clause ?? 'REC-4'}): ${first?.message ?? 'invalid'}`, {
    path: file,
    jobId: id,
    clause: first?.clause ?? 'REC-4',
  });
}

/**
 * The job's receipt: undefined when there is none, INVALID_RECORD when
 * receipt.json is not a valid receipt of this job (a hard link to another
 * job's receipt names that job, REC-7).
 */
export async function readReceipt(queue: Queue, files: JobFiles): Promise<ReceiptRecord | undefined> {
  if (!files.receipt) return undefined;
  const read = await readJobRecord(queue, files, 'receipt');
  if (read.ok) return read.value;
  throw invalidReceipt(queue.paths.jobFile(files.id, 'receipt.json'), files.id, read.findings);
}
