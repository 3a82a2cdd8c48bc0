/**
 * Small shared steps of the producer's operations on one published job:
 * find it, read its spec, remove its ready entry.
 */
import path from 'node:path';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { assertJobId, parseReadyEntry, readyEntryName } from '../model/layout.ts';
import { listJob, readJobRecord, type JobFiles } from '../model/job.ts';
import { listDir, removeTree } from '../fs/safefs.ts';
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

/**
 * READY-2/READY-3: remove the ready entry of a finished job. The entry is
 * named from the spec's priority; without a readable spec, ready/ is scanned
 * for the id. Failures are ignored: the entry is only a hint.
 */
export async function removeReadyEntry(queue: Queue, id: string, spec: SpecRecord | undefined): Promise<void> {
  const readyDir = queue.paths.dir('ready');
  try {
    if (spec !== undefined) {
      await removeTree(path.join(readyDir, readyEntryName(spec.priority, id)), queue.fsOptions);
      return;
    }
    for (const entry of await listDir(readyDir, queue.fsOptions)) {
      if (entry.kind === 'file' && parseReadyEntry(entry.name)?.id === id) await removeTree(path.join(readyDir, entry.name), queue.fsOptions);
    }
  } catch {
    // A hint that stays behind is removed by the next gc or consumer (READY-3).
  }
}
