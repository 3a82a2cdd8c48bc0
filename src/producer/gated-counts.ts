/**
 * How many jobs of a queue wait at a gate that no worker opens by itself:
 * held (HOLD-1: until fsjob release) and blocked (AFTER-1: a dependency
 * still pending, or behind a held one). `fsjob work --drain` reports them
 * when it exits, so that a drained queue with jobs left is not taken for an
 * empty one. Only a gated directory (jobs/<id>.gated, GATE-1) can be held or
 * blocked (STATUS-1), so only those are looked at: a queue of 100,000
 * finished jobs costs one listing of jobs/.
 */
import { FsjobError } from '../base/errors.ts';
import type { Clock } from '../base/clock.ts';
import { deriveStatus, listJobIn } from '../model/job.ts';
import { gatedJobDir, type Queue } from '../model/queue.ts';
import { listDir } from '../fs/safefs.ts';
import { GATED_SUFFIX, jobIdOfDirName } from '../records/names.ts';

/** Held and blocked jobs (STATUS-1) of a queue, looked at now. */
export interface GatedCounts {
  held: number;
  blocked: number;
}

/**
 * Counts the held and blocked jobs of `queue`. A job whose gate opened
 * meanwhile, or that cannot be read (fsjob status lists those apart), is not
 * counted: the figures are what could be seen, a report, never a decision.
 */
export async function gatedCounts(queue: Queue, options: { clock?: Clock } = {}): Promise<GatedCounts> {
  const counts: GatedCounts = { held: 0, blocked: 0 };
  for (const entry of await listDir(queue.paths.dir('jobs'), queue.fsOptions)) {
    const id = entry.kind === 'dir' && entry.name.endsWith(GATED_SUFFIX) ? jobIdOfDirName(entry.name) : undefined;
    if (id === undefined) continue;
    let status: string;
    try {
      status = (await deriveStatus(queue, await listJobIn(id, gatedJobDir(queue, id), true), options)).status;
    } catch (error) {
      if (error instanceof FsjobError) continue;
      throw error;
    }
    if (status === 'held' || status === 'blocked') counts[status] += 1;
  }
  return counts;
}
