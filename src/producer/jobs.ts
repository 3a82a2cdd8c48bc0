/**
 * Small shared steps of the producer's operations on one published job:
 * find it, read its spec.
 */
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { assertJobId } from '../model/layout.ts';
import { listJob, readJobRecord, type JobFiles } from '../model/job.ts';
import type { SpecRecord } from '../records/codec.ts';
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
